#!/usr/bin/env python3
"""Creates a user with a password through the API and signs it in through the web form;
prints `<user id> <Cookie header value>` for the page workloads (html.lua).

    sign_in.py BASE TOKEN EMAIL ROLE

BASE: the server's URL; TOKEN: an admin API token; ROLE: admin or unprivileged.
"""

import http.client
import json
import re
import secrets
import sys
import urllib.parse


def main():
    base, token, email, role = sys.argv[1:5]
    url = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    password = secrets.token_urlsafe(18)
    body = json.dumps({"user": {"email": email, "role": role, "password": password, "password_confirmation": password}})
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    conn.request("POST", "/v0/users", body, headers)
    res = conn.getresponse()
    created = res.read()
    if res.status != 201:
        sys.exit(f"sign_in.py: creating {email}: {res.status} {created[:300]!r}")
    user_id = json.loads(created)["data"]["id"]

    conn.request("GET", "/sign_in")
    res = conn.getresponse()
    page = res.read().decode()
    form_cookie = cookie(res, "ferrozone_sign_in")
    field = re.search(r'name="csrf_token" value="([^"]+)"', page)
    if not (form_cookie and field):
        sys.exit("sign_in.py: the sign-in page has no form token")
    form = urllib.parse.urlencode({"email": email, "password": password, "csrf_token": field.group(1)})
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Cookie": f"ferrozone_sign_in={form_cookie}"}
    conn.request("POST", "/sign_in", form, headers)
    res = conn.getresponse()
    res.read()
    session = cookie(res, "ferrozone_session")
    if res.status != 303 or not session:
        sys.exit(f"sign_in.py: signing in {email}: {res.status}")
    print(user_id, f"ferrozone_session={session}")


def cookie(res, name):
    for header in res.headers.get_all("Set-Cookie") or []:
        key, _, rest = header.partition("=")
        if key == name:
            return rest.split(";", 1)[0]
    return None


if __name__ == "__main__":
    main()
