"""SCIM provisioning driven by a real SCIM client library (scim2-client, scim2-models).

    python3 tests/scim/client.py BASE_URL SCIM_TOKEN ADMIN_TOKEN

BASE_URL is Ferrozone's (http://127.0.0.1:PORT). The client discovers the service provider
(its schemas, resource types and configuration, checked by scim2-models), provisions users
and a group, finds, patches, replaces and deletes them, and reads back what /v0 then says:
a deactivated user is disabled by SCIM, a group's members are the directory's.
"""

import sys

import httpx2
from scim2_client.engines.httpx2 import SyncSCIMClient
from scim2_models import (
    Email,
    Group,
    GroupMember,
    ListResponse,
    Name,
    PatchOp,
    PatchOperation,
    SCIMException,
    SearchRequest,
    User,
)

base, token, admin = sys.argv[1:4]
http = httpx2.Client(base_url=f"{base}/scim/v2", headers={"Authorization": f"Bearer {token}"})
v0 = httpx2.Client(base_url=base, headers={"Authorization": f"Bearer {admin}"})
scim = SyncSCIMClient(http)
scim.discover()
assert scim.provider.config.patch.supported
assert {t.endpoint for t in scim.provider.resource_types} == {"/Users", "/Groups"}, scim.provider.resource_types
checks = 0


def check(condition, what):
    global checks
    if not condition:
        sys.exit(f"scim-client: FAILED: {what}")
    checks += 1


def v0_user(user_id):
    return v0.get(f"/v0/users/{user_id}").raise_for_status().json()["data"]


# Users: create, find, patch, replace.
alice = scim.create(
    User(
        user_name="alice@example.com",
        external_id="ext-alice",
        display_name="Alice Anders",
        name=Name(given_name="Alice", family_name="Anders"),
        emails=[Email(value="alice@example.com", primary=True, type="work")],
        active=True,
    )
)
check(alice.id and alice.user_name == "alice@example.com" and alice.active, f"the created user: {alice}")
check(alice.meta.location.endswith(f"/scim/v2/Users/{alice.id}"), f"its location: {alice.meta.location}")
bob = scim.create(User(user_name="bob@example.com"))
check(bob.emails[0].value == "bob@example.com", "the userName as email")

found = scim.query(User, query_parameters=SearchRequest(filter='userName eq "ALICE@example.com"'))
check(isinstance(found, ListResponse) and found.total_results == 1, f"found by userName: {found}")
check(found.resources[0].id == alice.id, "the same user")
page = scim.query(User, query_parameters=SearchRequest(start_index=2, count=1))
check(page.total_results == 2 and len(page.resources) == 1 and page.resources[0].id == bob.id, f"a page: {page}")

off = PatchOp[User](operations=[PatchOperation(op=PatchOperation.Op.replace_, path="active", value=False)])
patched = scim.modify(User, alice.id, off)
check(patched.active is False, f"deactivated: {patched}")
check(v0_user(alice.id)["disabled_by"] == "scim", "disabled by SCIM in /v0")
on = PatchOp[User](operations=[PatchOperation(op=PatchOperation.Op.replace_, path="active", value=True)])
check(scim.modify(User, alice.id, on).active is True, "reactivated")
check(v0_user(alice.id)["disabled_at"] is None, "enabled in /v0")

alice.display_name = "Alice A."
# The answer's model is the one discovery built from the server's schema.
alice.emails = [type(alice.emails[0])(value="alice@corp.example", primary=True)]
replaced = scim.replace(alice)
check(replaced.display_name == "Alice A.", f"replaced: {replaced}")
check(v0_user(alice.id)["email"] == "alice@corp.example", "the new email in /v0")

# Groups: create with a member, add one, remove one.
group = scim.create(Group(display_name="Engineering", members=[GroupMember(value=alice.id)]))
check([m.value for m in group.members] == [alice.id], f"the group's members: {group}")
add = PatchOp[Group](
    operations=[PatchOperation(op=PatchOperation.Op.add, path="members", value=[GroupMember(value=bob.id)])]
)
group = scim.modify(Group, group.id, add)
check(sorted(m.value for m in group.members) == sorted([alice.id, bob.id]), f"a member added: {group}")
remove = PatchOp[Group](operations=[PatchOperation(op=PatchOperation.Op.remove, path=f'members[value eq "{alice.id}"]')])
group = scim.modify(Group, group.id, remove)
check([m.value for m in group.members] == [bob.id], f"a member removed: {group}")
members = v0.get(f"/v0/groups/{group.id}/members").raise_for_status().json()["data"]
check([(m["user_id"], m["source"]) for m in members] == [(bob.id, "scim")], f"/v0 members: {members}")
groups = scim.query(Group, query_parameters=SearchRequest(filter='displayName eq "engineering"'))
check(groups.total_results == 1, f"found by displayName: {groups}")

# Errors are SCIM errors.
try:
    scim.create(User(user_name="carol"))
    check(False, "a user without an email was refused")
except SCIMException as refused:
    error = refused.to_error()
    check(error.status == 400 and error.scim_type == "invalidValue" and "email" in error.detail, f"{error}")
try:
    scim.create(User(user_name="Bob@example.com"))
    check(False, "a taken userName was refused")
except SCIMException as refused:
    check(refused.to_error().scim_type == "uniqueness", f"{refused.to_error()}")

# Delete: the user is disabled and no SCIM user any more.
scim.delete(User, bob.id)
try:
    scim.query(User, bob.id)
    check(False, "a deleted user is gone from SCIM")
except SCIMException as gone:
    check(gone.to_error().status == 404, f"{gone.to_error()}")
check(v0_user(bob.id)["disabled_by"] == "scim", "a deleted user is disabled in /v0")
scim.delete(Group, group.id)
check(v0.get(f"/v0/groups/{group.id}").status_code == 404, "a deleted group is gone")

print(f"scim-client: {checks} checks passed with scim2-client")
