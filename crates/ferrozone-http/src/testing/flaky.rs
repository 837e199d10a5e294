//! A store that fails on demand, for the tests of outages (docs/api.md section 2: 503 when
//! the database cannot be reached, 500 for a bug).

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use axum::http::Method;
use ferrozone_domain::audit::{AuditHead, AuditQuery, EventRecord, NewAuditEvent};
use ferrozone_domain::crypto::Sealed;
use ferrozone_domain::egress::{EgressPolicy, EgressRules, Rule};
use ferrozone_domain::error::Result;
use ferrozone_domain::import::{ImportBatch, ImportMode, ImportOutcome};
use ferrozone_domain::input::RuleChanges;
use ferrozone_domain::ipam::Pools;
use ferrozone_domain::model::{
    ActivePeer, DataPlaneChanges, DeviceInsert, DeviceUpdate, OidcConnection, Session, SignInFlow, StatsReport,
    TotpRecord, UserUpdate,
};
use ferrozone_domain::store::{
    AuditLog, Belongings, DeviceBatches, DeviceQuery, ListedUser, TokenPage, UserDirectory, UserQuery,
};
use ferrozone_domain::vpn_session::VpnSession;
use ferrozone_domain::{ApiToken, Device, DomainError, Store, Timestamp, User};
use uuid::Uuid;

use super::{json_request, send_any, Faces, TestApp, TestResponse};

/// Which store calls fail, and how.
#[derive(Clone, Copy, PartialEq)]
pub enum Failure {
    /// The database is unreachable.
    Unavailable,
    /// An unexpected error, with a detail that must not reach the client.
    Internal,
}

/// Delegates to the real store, except for the calls named in `failing` (`"*"`: all).
struct Flaky {
    inner: Arc<dyn Store>,
    failing: Switch,
}

impl Flaky {
    fn check(&self, call: &str) -> Result<()> {
        match *self.failing.lock().unwrap() {
            Some((name, failure)) if name == "*" || name == call => Err(match failure {
                Failure::Unavailable => DomainError::Unavailable(anyhow::anyhow!("connection refused")),
                Failure::Internal => DomainError::Internal(anyhow::anyhow!("SECRET-DETAIL of the failure")),
            }),
            _ => Ok(()),
        }
    }
}

/// `impl Store for Flaky`: each call is `self.inner.$name(args)` after `self.check("$name")`.
macro_rules! delegate {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {
        #[async_trait]
        impl Store for Flaky {
            $(async fn $name(&self, $($arg: $ty),*) -> Result<$out> {
                self.check(stringify!($name))?;
                self.inner.$name($($arg),*).await
            })*
        }
    };
}

delegate! {
        ping() -> ();
        setting(key: &str) -> Option<Vec<u8>>;
        init_setting(key: &str, value: &[u8]) -> Vec<u8>;
        put_settings(entries: &[(String, Vec<u8>)]) -> ();
        list_users() -> Vec<User>;
        user_by_id(id: Uuid) -> Option<User>;
        user_by_email(email_key: &str) -> Option<User>;
        count_admins() -> u64;
        user_device_count(user_id: Uuid) -> Option<u64>;
        insert_user(user: &User) -> ();
        update_user(id: Uuid, update: &UserUpdate, now: Timestamp) -> User;
        delete_user(id: Uuid) -> ();
        insert_token(token: &ApiToken) -> ();
        token_by_hash(hash: &[u8]) -> Option<(ApiToken, User)>;
        token_by_id(id: Uuid) -> Option<(ApiToken, User)>;
        list_tokens(user_id: Uuid) -> Vec<ApiToken>;
        list_all_tokens(page: TokenPage) -> Vec<(ApiToken, User)>;
        touch_token(id: Uuid, now: Timestamp) -> ();
        delete_token(id: Uuid) -> bool;
        record_sign_in(user_id: Uuid, method: &str, at: Timestamp) -> ();
        insert_session(session: &Session, method: &str) -> ();
        delete_user_sessions(user_id: Uuid) -> u64;
        insert_sign_in_flow(flow: &SignInFlow, now: Timestamp) -> ();
        take_sign_in_flow(state_hash: &[u8]) -> Option<SignInFlow>;
        totp_of(user_id: Uuid) -> Option<TotpRecord>;
        start_totp(user_id: Uuid, secret: &Sealed, now: Timestamp) -> bool;
        confirm_totp(user_id: Uuid, step: i64, now: Timestamp, recovery_codes: &[Vec<u8>]) -> bool;
        accept_totp_step(user_id: Uuid, step: i64) -> bool;
        replace_recovery_codes(user_id: Uuid, recovery_codes: &[Vec<u8>]) -> bool;
        use_recovery_code(user_id: Uuid, code_hash: &[u8]) -> bool;
        delete_totp(user_id: Uuid) -> bool;
        session_by_hash(hash: &[u8]) -> Option<(Session, User)>;
        delete_session(id: Uuid) -> bool;
        delete_expired_sessions(now: Timestamp) -> u64;
        upsert_oidc_connection(connection: &OidcConnection) -> ();
        list_oidc_connections() -> Vec<OidcConnection>;
        claim_oidc_connection(user_id: Uuid, provider_id: &str, seen: Timestamp, now: Timestamp) -> bool;
        rotate_oidc_refresh_token(
            user_id: Uuid, provider_id: &str, claimed_at: Timestamp, refresh_token: &Sealed, now: Timestamp
        ) -> bool;
        delete_oidc_connection(user_id: Uuid, provider_id: &str, claimed_at: Timestamp) -> bool;
        list_devices(query: &DeviceQuery) -> Vec<Device>;
        stream_devices(query: &DeviceQuery) -> DeviceBatches;
        device_by_id(id: Uuid) -> Option<Device>;
        insert_device(device: &DeviceInsert, pools: &Pools, max_devices: u32) -> Device;
        update_device(id: Uuid, update: &DeviceUpdate, now: Timestamp) -> Device;
        set_device_paused(id: Uuid, paused: bool, now: Timestamp) -> Option<Device>;
        delete_device(id: Uuid) -> bool;
        list_rules() -> Vec<Rule>;
        rule_by_id(id: Uuid) -> Option<Rule>;
        insert_rule(rule: &Rule) -> ();
        update_rule(id: Uuid, changes: &RuleChanges, now: Timestamp) -> Option<Rule>;
        delete_rule(id: Uuid) -> bool;
        egress_policy(session: VpnSession) -> EgressPolicy;
        active_peers(session: VpnSession) -> Vec<ActivePeer>;
        record_stats_from(source: Uuid, reports: Vec<StatsReport>) -> ();
        egress_rules() -> EgressRules;
        watch_data_plane(changes: DataPlaneChanges) -> ();
        watch_configuration_changes(changed: Arc<tokio::sync::Notify>) -> ();
        import(batch: &ImportBatch, mode: ImportMode) -> ImportOutcome;
}

#[async_trait]
impl UserDirectory for Flaky {
    async fn list_users_page(&self, query: &UserQuery) -> Result<Vec<ListedUser>> {
        self.check("list_users_page")?;
        self.inner.list_users_page(query).await
    }
    async fn list_user_sessions(&self, user_id: Uuid, now: Timestamp) -> Result<Vec<Session>> {
        self.check("list_user_sessions")?;
        self.inner.list_user_sessions(user_id, now).await
    }
    async fn user_belongings(&self, user_id: Uuid) -> Result<Option<Belongings>> {
        self.check("user_belongings")?;
        self.inner.user_belongings(user_id).await
    }
    async fn users_by_ids(&self, ids: &[Uuid]) -> Result<Vec<User>> {
        self.check("users_by_ids")?;
        self.inner.users_by_ids(ids).await
    }
}

#[async_trait]
impl AuditLog for Flaky {
    async fn append_audit_events(&self, events: &[NewAuditEvent]) -> Result<()> {
        self.check("append_audit_events")?;
        self.inner.append_audit_events(events).await
    }
    async fn prune_audit_events(&self, before: Timestamp, max: u32) -> Result<u64> {
        self.check("prune_audit_events")?;
        self.inner.prune_audit_events(before, max).await
    }
    async fn audit_head(&self) -> Result<AuditHead> {
        self.check("audit_head")?;
        self.inner.audit_head().await
    }
    async fn audit_records(&self, query: &AuditQuery) -> Result<Vec<EventRecord>> {
        self.check("audit_records")?;
        self.inner.audit_records(query).await
    }
}

/// The webhook calls, each `self.inner.$name(args)` after `self.check("$name")`.
mod webhook_calls {
    use async_trait::async_trait;
    use ferrozone_domain::error::Result;
    use ferrozone_domain::store::WebhookStore;
    use ferrozone_domain::webhook::{Attempt, Progress, Webhook, WebhookInsert, WebhookLease, WebhookUpdate};
    use ferrozone_domain::Timestamp;
    use uuid::Uuid;

    use super::Flaky;

    #[async_trait]
    impl WebhookStore for Flaky {
        async fn insert_webhook(&self, webhook: &WebhookInsert) -> Result<Webhook> {
            self.check("insert_webhook")?;
            self.inner.insert_webhook(webhook).await
        }
        async fn list_webhooks(&self) -> Result<Vec<Webhook>> {
            self.check("list_webhooks")?;
            self.inner.list_webhooks().await
        }
        async fn webhook_by_id(&self, id: Uuid) -> Result<Option<Webhook>> {
            self.check("webhook_by_id")?;
            self.inner.webhook_by_id(id).await
        }
        async fn update_webhook(&self, id: Uuid, update: &WebhookUpdate, now: Timestamp) -> Result<Webhook> {
            self.check("update_webhook")?;
            self.inner.update_webhook(id, update, now).await
        }
        async fn delete_webhook(&self, id: Uuid) -> Result<bool> {
            self.check("delete_webhook")?;
            self.inner.delete_webhook(id).await
        }
        async fn webhook_attempts(&self, id: Uuid, limit: u32) -> Result<Vec<Attempt>> {
            self.check("webhook_attempts")?;
            self.inner.webhook_attempts(id, limit).await
        }
        async fn claim_webhooks(
            &self,
            owner: Uuid,
            now: Timestamp,
            until: Timestamp,
            limit: u32,
        ) -> Result<Vec<WebhookLease>> {
            self.check("claim_webhooks")?;
            self.inner.claim_webhooks(owner, now, until, limit).await
        }
        async fn renew_webhook_lease(&self, id: Uuid, owner: Uuid, until: Timestamp) -> Result<bool> {
            self.check("renew_webhook_lease")?;
            self.inner.renew_webhook_lease(id, owner, until).await
        }
        async fn record_webhook_progress(&self, id: Uuid, owner: Uuid, progress: &Progress) -> Result<bool> {
            self.check("record_webhook_progress")?;
            self.inner.record_webhook_progress(id, owner, progress).await
        }
        async fn release_webhook_lease(&self, id: Uuid, owner: Uuid) -> Result<()> {
            self.check("release_webhook_lease")?;
            self.inner.release_webhook_lease(id, owner).await
        }
    }
}

/// The sign-in link and outbox calls, each `self.inner.$name(args)` after `self.check("$name")`.
mod link_calls {
    use async_trait::async_trait;
    use ferrozone_domain::email::{EmailLease, EmailOutcome};
    use ferrozone_domain::error::Result;
    use ferrozone_domain::sign_in_link::{LinkInsert, LinkKind, ListedLink, SignInLink};
    use ferrozone_domain::store::LinkStore;
    use ferrozone_domain::{Timestamp, User};
    use uuid::Uuid;

    use super::Flaky;

    #[async_trait]
    impl LinkStore for Flaky {
        async fn insert_sign_in_link(&self, insert: &LinkInsert) -> Result<()> {
            self.check("insert_sign_in_link")?;
            self.inner.insert_sign_in_link(insert).await
        }
        async fn list_sign_in_links(&self, kind: LinkKind, limit: u32) -> Result<Vec<ListedLink>> {
            self.check("list_sign_in_links")?;
            self.inner.list_sign_in_links(kind, limit).await
        }
        async fn sign_in_link_by_hash(&self, hash: &[u8]) -> Result<Option<(SignInLink, User)>> {
            self.check("sign_in_link_by_hash")?;
            self.inner.sign_in_link_by_hash(hash).await
        }
        async fn use_sign_in_link(
            &self,
            hash: &[u8],
            now: Timestamp,
            password: Option<String>,
        ) -> Result<Option<(SignInLink, User)>> {
            self.check("use_sign_in_link")?;
            self.inner.use_sign_in_link(hash, now, password).await
        }
        async fn revoke_sign_in_link(&self, id: Uuid, now: Timestamp) -> Result<bool> {
            self.check("revoke_sign_in_link")?;
            self.inner.revoke_sign_in_link(id, now).await
        }
        async fn live_sign_in_links(&self, user_id: Uuid, kind: LinkKind, now: Timestamp) -> Result<u64> {
            self.check("live_sign_in_links")?;
            self.inner.live_sign_in_links(user_id, kind, now).await
        }
        async fn claim_emails(
            &self,
            owner: Uuid,
            now: Timestamp,
            until: Timestamp,
            limit: u32,
        ) -> Result<Vec<EmailLease>> {
            self.check("claim_emails")?;
            self.inner.claim_emails(owner, now, until, limit).await
        }
        async fn record_email_attempt(&self, id: Uuid, owner: Uuid, outcome: &EmailOutcome) -> Result<bool> {
            self.check("record_email_attempt")?;
            self.inner.record_email_attempt(id, owner, outcome).await
        }
        async fn prune_sign_in_links(&self, before: Timestamp, max: u32) -> Result<u64> {
            self.check("prune_sign_in_links")?;
            self.inner.prune_sign_in_links(before, max).await
        }
    }
}

/// The groups' calls, each `self.inner.$name(args)` after `self.check("$name")`.
mod group_calls {
    use async_trait::async_trait;
    use ferrozone_domain::error::Result;
    use ferrozone_domain::group::{Group, GroupUpdate, Member};
    use ferrozone_domain::store::{GroupStore, MemberAdded};
    use ferrozone_domain::Timestamp;
    use uuid::Uuid;

    use super::Flaky;

    #[async_trait]
    impl GroupStore for Flaky {
        async fn insert_group(&self, group: &Group) -> Result<()> {
            self.check("insert_group")?;
            self.inner.insert_group(group).await
        }
        async fn list_groups(&self) -> Result<Vec<Group>> {
            self.check("list_groups")?;
            self.inner.list_groups().await
        }
        async fn group_by_id(&self, id: Uuid) -> Result<Option<Group>> {
            self.check("group_by_id")?;
            self.inner.group_by_id(id).await
        }
        async fn update_group(&self, update: &GroupUpdate) -> Result<Option<Group>> {
            self.check("update_group")?;
            self.inner.update_group(update).await
        }
        async fn delete_group(&self, id: Uuid) -> Result<Option<Group>> {
            self.check("delete_group")?;
            self.inner.delete_group(id).await
        }
        async fn group_members(&self, id: Uuid) -> Result<Option<Vec<Member>>> {
            self.check("group_members")?;
            self.inner.group_members(id).await
        }
        async fn group_member(&self, group: Uuid, user: Uuid) -> Result<Option<Member>> {
            self.check("group_member")?;
            self.inner.group_member(group, user).await
        }
        async fn add_group_member(&self, group: Uuid, user: Uuid, source: &str, now: Timestamp) -> Result<MemberAdded> {
            self.check("add_group_member")?;
            self.inner.add_group_member(group, user, source, now).await
        }
        async fn user_groups(&self, user: Uuid) -> Result<Vec<Group>> {
            self.check("user_groups")?;
            self.inner.user_groups(user).await
        }
        async fn sync_user_groups(
            &self,
            user: Uuid,
            source: &str,
            names: &[String],
            now: Timestamp,
        ) -> Result<ferrozone_domain::group_sync::GroupSync> {
            self.check("sync_user_groups")?;
            self.inner.sync_user_groups(user, source, names, now).await
        }
        async fn remove_group_member(&self, group: Uuid, user: Uuid) -> Result<bool> {
            self.check("remove_group_member")?;
            self.inner.remove_group_member(group, user).await
        }
    }
}

/// The gateway registry's calls, each `self.inner.$name(args)` after `self.check("$name")`.
mod gateway_calls {
    use async_trait::async_trait;
    use ferrozone_domain::error::Result;
    use ferrozone_domain::gateway::{Enrolment, Gateway, GatewayInsert, Lease, LeaseOutcome};
    use ferrozone_domain::store::GatewayStore;
    use ferrozone_domain::Timestamp;
    use uuid::Uuid;

    use super::Flaky;

    #[async_trait]
    impl GatewayStore for Flaky {
        async fn insert_gateway(&self, insert: &GatewayInsert) -> Result<()> {
            self.check("insert_gateway")?;
            self.inner.insert_gateway(insert).await
        }
        async fn list_gateways(&self) -> Result<Vec<Gateway>> {
            self.check("list_gateways")?;
            self.inner.list_gateways().await
        }
        async fn gateway_by_id(&self, id: Uuid) -> Result<Option<Gateway>> {
            self.check("gateway_by_id")?;
            self.inner.gateway_by_id(id).await
        }
        async fn enrol_gateway(&self, enrolment: &Enrolment) -> Result<Option<Gateway>> {
            self.check("enrol_gateway")?;
            self.inner.enrol_gateway(enrolment).await
        }
        async fn gateway_by_credential(&self, hash: &[u8]) -> Result<Option<Gateway>> {
            self.check("gateway_by_credential")?;
            self.inner.gateway_by_credential(hash).await
        }
        async fn revoke_gateway(&self, id: Uuid, now: Timestamp) -> Result<Option<Gateway>> {
            self.check("revoke_gateway")?;
            self.inner.revoke_gateway(id, now).await
        }
        async fn hold_gateway_session(&self, lease: &Lease) -> Result<LeaseOutcome> {
            self.check("hold_gateway_session")?;
            self.inner.hold_gateway_session(lease).await
        }
        async fn release_gateway_session(&self, lease: &Lease) -> Result<bool> {
            self.check("release_gateway_session")?;
            self.inner.release_gateway_session(lease).await
        }
        async fn end_lapsed_gateway_sessions(&self, before: Timestamp) -> Result<Vec<Gateway>> {
            self.check("end_lapsed_gateway_sessions")?;
            self.inner.end_lapsed_gateway_sessions(before).await
        }
        async fn vpn_session_starts(&self, cutoff: Timestamp) -> Result<Vec<(Uuid, Timestamp)>> {
            self.check("vpn_session_starts")?;
            self.inner.vpn_session_starts(cutoff).await
        }
    }
}

/// The SCIM calls, each `self.inner.$name(args)` after `self.check("$name")`.
mod scim_calls {
    use async_trait::async_trait;
    use ferrozone_domain::error::Result;
    use ferrozone_domain::group::Group;
    use ferrozone_domain::scim::{
        GroupFilter, Listed, MembersChanged, Page, ScimGroup, ScimGroupWrite, ScimMember, ScimToken, ScimUser,
        ScimUserWrite, Start, UserFilter, UsersPage,
    };
    use ferrozone_domain::store::ScimStore;
    use ferrozone_domain::{Timestamp, User};
    use uuid::Uuid;

    use super::Flaky;

    #[async_trait]
    impl ScimStore for Flaky {
        async fn insert_scim_token(&self, token: &ScimToken) -> Result<()> {
            self.check("insert_scim_token")?;
            self.inner.insert_scim_token(token).await
        }
        async fn scim_token_by_hash(&self, hash: &[u8]) -> Result<Option<ScimToken>> {
            self.check("scim_token_by_hash")?;
            self.inner.scim_token_by_hash(hash).await
        }
        async fn list_scim_tokens(&self) -> Result<Vec<ScimToken>> {
            self.check("list_scim_tokens")?;
            self.inner.list_scim_tokens().await
        }
        async fn revoke_scim_token(&self, id: Uuid, now: Timestamp) -> Result<Option<ScimToken>> {
            self.check("revoke_scim_token")?;
            self.inner.revoke_scim_token(id, now).await
        }
        async fn touch_scim_token(&self, id: Uuid, now: Timestamp) -> Result<()> {
            self.check("touch_scim_token")?;
            self.inner.touch_scim_token(id, now).await
        }
        async fn create_scim_user(&self, write: &ScimUserWrite, now: Timestamp) -> Result<ScimUser> {
            self.check("create_scim_user")?;
            self.inner.create_scim_user(write, now).await
        }
        async fn replace_scim_user(&self, id: Uuid, write: &ScimUserWrite, now: Timestamp) -> Result<ScimUser> {
            self.check("replace_scim_user")?;
            self.inner.replace_scim_user(id, write, now).await
        }
        async fn delete_scim_user(&self, id: Uuid, now: Timestamp) -> Result<User> {
            self.check("delete_scim_user")?;
            self.inner.delete_scim_user(id, now).await
        }
        async fn scim_users(&self, filter: &UserFilter, page: Page) -> Result<Listed<ScimUser>> {
            self.check("scim_users")?;
            self.inner.scim_users(filter, page).await
        }
        async fn every_scim_user(&self, count: u32, start: Start) -> Result<UsersPage> {
            self.check("every_scim_user")?;
            self.inner.every_scim_user(count, start).await
        }
        async fn scim_user(&self, id: Uuid) -> Result<Option<ScimUser>> {
            self.check("scim_user")?;
            self.inner.scim_user(id).await
        }
        async fn scim_groups(&self, filter: &GroupFilter, page: Page) -> Result<Listed<ScimGroup>> {
            self.check("scim_groups")?;
            self.inner.scim_groups(filter, page).await
        }
        async fn scim_group(&self, id: Uuid) -> Result<Option<ScimGroup>> {
            self.check("scim_group")?;
            self.inner.scim_group(id).await
        }
        async fn scim_members(&self, groups: &[Uuid]) -> Result<Vec<(Uuid, ScimMember)>> {
            self.check("scim_members")?;
            self.inner.scim_members(groups).await
        }
        async fn create_scim_group(
            &self,
            group: &Group,
            external_id: Option<&str>,
            members: &[Uuid],
        ) -> Result<(ScimGroup, MembersChanged)> {
            self.check("create_scim_group")?;
            self.inner.create_scim_group(group, external_id, members).await
        }
        async fn write_scim_group(
            &self,
            id: Uuid,
            write: &ScimGroupWrite,
            now: Timestamp,
        ) -> Result<Option<(ScimGroup, MembersChanged)>> {
            self.check("write_scim_group")?;
            self.inner.write_scim_group(id, write, now).await
        }
    }
}

/// Which store call fails (`"*"`: every one), and how; `None`: none.
pub type Switch = Arc<Mutex<Option<(&'static str, Failure)>>>;

/// A `TestApp` on a [`Flaky`] store, and the switch that makes it fail.
pub async fn flaky_app<F: Faces>() -> (TestApp<F>, Switch) {
    let failing = Arc::new(Mutex::new(None));
    let switch = failing.clone();
    let app = TestApp::build(|_| {}, move |inner| flaky(inner, failing)).await;
    (app, switch)
}

/// `inner` behind a store that fails as `failing` says.
pub fn flaky(inner: Arc<dyn Store>, failing: Switch) -> Arc<dyn Store> {
    Arc::new(Flaky { inner, failing })
}

pub async fn call<F>(app: &TestApp<F>, method: Method, path: &str, body: Option<serde_json::Value>) -> TestResponse {
    send_any(app.router.clone(), json_request(method, path, Some(&app.admin), body.as_ref())).await
}
