"""A person getting a client configuration through scripts/wg-e2e's portal, without a script.

    python3 portal.py BASE_URL EMAIL NAME < PASSWORD

Signs in with the password form (GET /sign_in for its token, POST /sign_in), opens
GET /devices/new, posts that form with a key made on the server, and prints the
configuration the answer shows once (its <pre id="config">, unescaped): the private key
included. Exits 1 with the status and page on any unexpected answer.
"""

import html
import http.cookiejar
import re
import sys
import urllib.error
import urllib.parse
import urllib.request


def field(page, name):
    """The value of the form field called `name` in `page`."""
    found = re.search(r'name="%s" value="([^"]*)"' % re.escape(name), page)
    if not found:
        sys.exit(f"portal: no {name} field in\n{page}")
    return html.unescape(found.group(1))


def main():
    base, email, name = sys.argv[1:4]
    password = sys.stdin.readline().rstrip("\n")
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))

    def call(path, form=None, expect=200):
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        try:
            with opener.open(base + path, data) as answer:
                status, page = answer.status, answer.read().decode()
        except urllib.error.HTTPError as refused:
            status, page = refused.code, refused.read().decode()
        if status != expect:
            sys.exit(f"portal: {path} answered {status}, not {expect}:\n{page}")
        return page

    sign_in = call("/sign_in")
    # The redirect after signing in is followed: to the home page, signed in.
    home = call("/sign_in", {"email": email, "password": password, "return_to": "/",
                             "csrf_token": field(sign_in, "csrf_token")})
    if "Sign out" not in home:
        sys.exit(f"portal: not signed in:\n{home}")
    form = call("/devices/new")
    shown = call("/devices/new", {"csrf_token": field(form, "csrf_token"), "name": name,
                                  "key_mode": "server"}, expect=201)
    config = re.search(r'<pre id="config"[^>]*>(.*?)</pre>', shown, re.S)
    if not config:
        sys.exit(f"portal: no configuration in\n{shown}")
    sys.stdout.write(html.unescape(config.group(1)))


if __name__ == "__main__":
    main()
