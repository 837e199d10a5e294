//! The storage interface: users, tokens, sessions, provider sign-ins, devices, and what the
//! data plane reads and writes. Each method is one atomic use-case step; every guarantee
//! that must hold across processes (unique addresses and keys, the device limit, the last
//! admin, a new password ending every session) is enforced inside one transaction of the
//! backend, so several processes sharing a PostgreSQL database keep it too.

use async_trait::async_trait;

use crate::scim::{
    GroupFilter, Listed, MembersChanged, Page, ScimGroup, ScimGroupWrite, ScimMember, ScimToken, ScimUser,
    ScimUserWrite, Start, UserFilter, UsersPage,
};
use uuid::Uuid;

use crate::audit::{AuditHead, AuditQuery, EventRecord, NewAuditEvent};
use crate::crypto::Sealed;
use crate::egress::{EgressPolicy, EgressRules, Rule};
use crate::email::{EmailLease, EmailOutcome};
use crate::error::Result;
use crate::gateway::{Enrolment, Gateway, GatewayInsert, Lease, LeaseOutcome};
use crate::group::{Group, GroupUpdate, Member};
use crate::group_sync::GroupSync;
use crate::import::{ImportBatch, ImportMode, ImportOutcome};
use crate::input::RuleChanges;
use crate::ipam::Pools;
use crate::model::{
    ActivePeer, ApiToken, DataPlaneChanges, Device, DeviceInsert, DeviceUpdate, OidcConnection, Session, SignInFlow,
    StatsReport, TotpRecord, User, UserUpdate,
};
use crate::sign_in_link::{LinkInsert, LinkKind, ListedLink, SignInLink};
use crate::time::Timestamp;
use crate::vpn_session::VpnSession;
use crate::webhook::{Attempt, Progress, Webhook, WebhookInsert, WebhookLease, WebhookUpdate};

/// Which devices a list returns, and how many.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceQuery {
    /// Only this user's devices.
    pub user_id: Option<Uuid>,
    /// Start after this `(inserted_at, id)` position.
    pub after: Option<(Timestamp, Uuid)>,
    /// At most this many rows; `None` returns all.
    pub limit: Option<u32>,
    /// Only the devices online, or only those offline, as of a cutoff (see [`Presence`]).
    pub presence: Option<Presence>,
}

/// Whether a device's latest handshake is at or after a cutoff (online) or not (offline:
/// older, or never). The domain sets the cutoff ([`crate::model::online_cutoff`]), so the
/// rule lives in one place and the backend filters in SQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    OnlineSince(Timestamp),
    OfflineSince(Timestamp),
}

impl Presence {
    /// Online (`true`) or offline devices, as of now.
    pub fn now(online: bool) -> Self {
        let cutoff = crate::model::online_cutoff(Timestamp::now());
        if online {
            Self::OnlineSince(cutoff)
        } else {
            Self::OfflineSince(cutoff)
        }
    }

    pub fn cutoff(self) -> Timestamp {
        match self {
            Self::OnlineSince(t) | Self::OfflineSince(t) => t,
        }
    }
}

/// A page of every user's API tokens, each with its owner, in creation order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenPage {
    /// Start after this `(inserted_at, id)` position.
    pub after: Option<(Timestamp, Uuid)>,
    pub limit: u32,
}

/// A list read as the backend reads it: batches of at most [`STREAM_BATCH`] devices, in
/// list order, from one statement and so from one snapshot. The backend waits while the
/// channel is full, so a slow reader holds back the read, never fills memory. An `Err`
/// ends the stream.
pub type DeviceBatches = tokio::sync::mpsc::Receiver<Result<Vec<Device>>>;

/// The most devices one [`DeviceBatches`] batch holds.
pub const STREAM_BATCH: usize = 256;

/// The capacity of a [`DeviceBatches`] channel: one batch in flight while the next is read.
pub const STREAM_DEPTH: usize = 2;

/// What Ferrozone stores. A broken rule or a taken unique value (a public key, an email)
/// comes back as [`crate::DomainError::Invalid`] with the field and message the API shows;
/// a database that cannot be reached as [`crate::DomainError::Unavailable`].
#[async_trait]
pub trait Store: UserDirectory + AuditLog + WebhookStore + LinkStore + GatewayStore + GroupStore + ScimStore {
    /// Checks that the database answers.
    async fn ping(&self) -> Result<()>;

    /// A value from the settings table.
    async fn setting(&self, key: &str) -> Result<Option<Vec<u8>>>;
    /// Stores `value` under `key` unless a value is there already; returns the value that is
    /// stored afterwards, so that racing processes all end up with the same one.
    async fn init_setting(&self, key: &str, value: &[u8]) -> Result<Vec<u8>>;
    /// Stores every `(key, value)`, replacing values already there, in one transaction.
    async fn put_settings(&self, entries: &[(String, Vec<u8>)]) -> Result<()>;

    async fn list_users(&self) -> Result<Vec<User>>;
    async fn user_by_id(&self, id: Uuid) -> Result<Option<User>>;
    /// Looks a user up by [`crate::model::email_key`].
    async fn user_by_email(&self, email_key: &str) -> Result<Option<User>>;
    async fn count_admins(&self) -> Result<u64>;
    /// How many devices the user has (kept by the store, not counted row by row); `None`
    /// when there is no such user.
    async fn user_device_count(&self, user_id: Uuid) -> Result<Option<u64>>;
    /// Inserts a user; a taken email is `Invalid { email: has already been taken }`.
    async fn insert_user(&self, user: &User) -> Result<()>;
    /// Applies `update`; demoting the last admin is `Invalid { base: cannot remove the last admin }`.
    /// `updated_at` moves only when a stored value changes.
    async fn update_user(&self, id: Uuid, update: &UserUpdate, now: Timestamp) -> Result<User>;
    /// Deletes a user with its devices and tokens; the last admin cannot be deleted.
    async fn delete_user(&self, id: Uuid) -> Result<()>;

    async fn insert_token(&self, token: &ApiToken) -> Result<()>;
    /// The token with this hash and its owner, if the token exists (expired or not).
    async fn token_by_hash(&self, hash: &[u8]) -> Result<Option<(ApiToken, User)>>;
    /// A token with its owner, by id: the look-up of a token imported from Firezone, whose
    /// bearer string names its row.
    async fn token_by_id(&self, id: Uuid) -> Result<Option<(ApiToken, User)>>;
    async fn list_tokens(&self, user_id: Uuid) -> Result<Vec<ApiToken>>;
    /// Records a use of the token. Called rarely (see the auth service).
    async fn touch_token(&self, id: Uuid, now: Timestamp) -> Result<()>;
    /// Every user's tokens with their owner, one page in `(inserted_at, id)` order.
    async fn list_all_tokens(&self, page: TokenPage) -> Result<Vec<(ApiToken, User)>>;
    /// Returns whether a token was deleted.
    async fn delete_token(&self, id: Uuid) -> Result<bool>;

    /// Records a sign-in: sets `last_signed_in_at` and `last_signed_in_method`. Signing in is
    /// not an edit: `updated_at` does not move. An unknown user is not an error.
    async fn record_sign_in(&self, user_id: Uuid, method: &str, at: Timestamp) -> Result<()>;

    /// Inserts the session of a sign-in by `method` (`password` or a provider's id), which
    /// the audit log records as `user.signed_in`.
    async fn insert_session(&self, session: &Session, method: &str) -> Result<()>;
    /// The session with this secret hash and its user, if it exists (expired or not).
    async fn session_by_hash(&self, hash: &[u8]) -> Result<Option<(Session, User)>>;
    /// Returns whether a session was deleted.
    async fn delete_session(&self, id: Uuid) -> Result<bool>;
    /// Deletes every session of the user; returns how many went.
    async fn delete_user_sessions(&self, user_id: Uuid) -> Result<u64>;
    /// Deletes every session that expired at or before `now`; returns how many went.
    async fn delete_expired_sessions(&self, now: Timestamp) -> Result<u64>;

    /// Stores the connection of a user to an OpenID Connect provider, replacing the refresh
    /// token (and `refreshed_at`, `updated_at`) of one that exists; `inserted_at` stays. The
    /// user must exist.
    async fn upsert_oidc_connection(&self, connection: &OidcConnection) -> Result<()>;
    /// Every OpenID Connect connection, in no order.
    async fn list_oidc_connections(&self) -> Result<Vec<OidcConnection>>;
    /// Claims a connection for a refresh: moves `refreshed_at` from `seen` to `now` and
    /// returns true, unless `refreshed_at` is no longer `seen` (another process claimed it,
    /// or a sign-in replaced it) or the connection is gone: then false, and nothing changes.
    async fn claim_oidc_connection(
        &self,
        user_id: Uuid,
        provider_id: &str,
        seen: Timestamp,
        now: Timestamp,
    ) -> Result<bool>;
    /// Replaces the refresh token of the connection claimed at `claimed_at` (a provider that
    /// rotates them); returns false, changing nothing, when the connection is gone or is no
    /// longer that claim's (a sign-in replaced it meanwhile).
    async fn rotate_oidc_refresh_token(
        &self,
        user_id: Uuid,
        provider_id: &str,
        claimed_at: Timestamp,
        refresh_token: &Sealed,
        now: Timestamp,
    ) -> Result<bool>;
    /// Deletes the connection claimed at `claimed_at`; false, deleting nothing, when it is
    /// gone or no longer that claim's.
    async fn delete_oidc_connection(&self, user_id: Uuid, provider_id: &str, claimed_at: Timestamp) -> Result<bool>;
    /// Stores a provider sign-in in progress, and deletes those that expired by `now`.
    async fn insert_sign_in_flow(&self, flow: &SignInFlow, now: Timestamp) -> Result<()>;
    /// Deletes the flow with this state hash and returns it (expired or not): each flow is
    /// taken at most once, also when several processes race for it.
    async fn take_sign_in_flow(&self, state_hash: &[u8]) -> Result<Option<SignInFlow>>;

    /// The user's authenticator, pending or confirmed, with its unused recovery codes counted.
    async fn totp_of(&self, user_id: Uuid) -> Result<Option<TotpRecord>>;
    /// Stores `secret` as the user's pending authenticator (replacing a pending one) unless
    /// one is confirmed; returns whether it was stored.
    async fn start_totp(&self, user_id: Uuid, secret: &Sealed, now: Timestamp) -> Result<bool>;
    /// Confirms the pending authenticator with the code of `step`, and stores the hashes of
    /// its first recovery codes, in one transaction; false, changing nothing, when no
    /// enrolment is pending.
    async fn confirm_totp(&self, user_id: Uuid, step: i64, now: Timestamp, recovery_codes: &[Vec<u8>]) -> Result<bool>;
    /// Records that the code of `step` was used, if the authenticator is confirmed and
    /// `step` is after the last one used: returns whether. One statement, so of two
    /// requests racing with the same code only one gets `true`.
    async fn accept_totp_step(&self, user_id: Uuid, step: i64) -> Result<bool>;
    /// Replaces the recovery codes of a confirmed authenticator, in one transaction; false,
    /// changing nothing, when there is none.
    async fn replace_recovery_codes(&self, user_id: Uuid, recovery_codes: &[Vec<u8>]) -> Result<bool>;
    /// Deletes the recovery code with this hash; returns whether it was there (each works once).
    async fn use_recovery_code(&self, user_id: Uuid, code_hash: &[u8]) -> Result<bool>;
    /// Deletes the user's authenticator, pending or confirmed, and its recovery codes;
    /// returns whether there was one.
    async fn delete_totp(&self, user_id: Uuid) -> Result<bool>;

    async fn list_devices(&self, query: &DeviceQuery) -> Result<Vec<Device>>;
    /// The devices `query` selects, streamed (see [`DeviceBatches`]).
    async fn stream_devices(&self, query: &DeviceQuery) -> Result<DeviceBatches>;
    async fn device_by_id(&self, id: Uuid) -> Result<Option<Device>>;
    /// [`Store::token_by_hash`] and [`Store::device_by_id`] in one read: the hot path of an
    /// authenticated `GET` of one device. A backend may do both in one transaction or one
    /// statement. Without a token the device is not read (`None`): the request is refused.
    async fn token_and_device(&self, hash: &[u8], id: Uuid) -> Result<(Option<(ApiToken, User)>, Option<Device>)> {
        let Some(token) = self.token_by_hash(hash).await? else { return Ok((None, None)) };
        Ok((Some(token), self.device_by_id(id).await?))
    }
    /// Inserts a device, assigning addresses from `pools` where asked, in one transaction
    /// that also enforces the owner's device limit (`max_devices`). The owner must exist
    /// (`Invalid { user_id: does not exist }`).
    async fn insert_device(&self, device: &DeviceInsert, pools: &Pools, max_devices: u32) -> Result<Device>;
    /// Writes `update` if it differs from the stored device; returns the stored device.
    async fn update_device(&self, id: Uuid, update: &DeviceUpdate, now: Timestamp) -> Result<Device>;
    /// Pauses (`paused`, at `now`) or resumes the device, with its audit event when that
    /// changes it; the device as it is then, `None` when there is none
    /// ([`crate::rules::devices::set_paused`]).
    async fn set_device_paused(&self, id: Uuid, paused: bool, now: Timestamp) -> Result<Option<Device>>;
    /// Returns whether a device was deleted. Its addresses go back to the pool.
    async fn delete_device(&self, id: Uuid) -> Result<bool>;

    /// Every egress rule, in no order.
    async fn list_rules(&self) -> Result<Vec<Rule>>;
    async fn rule_by_id(&self, id: Uuid) -> Result<Option<Rule>>;
    /// Inserts a rule in one transaction that refuses an unknown user (`Invalid { user: does
    /// not exist }`) and a rule overlapping another of the same action and scope (`Invalid {
    /// destination: ... }`), also against concurrent writers ([`crate::rules::egress`]).
    async fn insert_rule(&self, rule: &Rule) -> Result<()>;
    /// Applies `changes` to the stored rule (validated as `PATCH /v0/rules` validates them,
    /// then with the checks of [`Store::insert_rule`]), reading and writing it in one
    /// transaction; `None`, writing nothing, when the rule does not exist.
    async fn update_rule(&self, id: Uuid, changes: &RuleChanges, now: Timestamp) -> Result<Option<Rule>>;
    /// Returns whether a rule was deleted.
    async fn delete_rule(&self, id: Uuid) -> Result<bool>;

    /// Every rule and the addresses of the active devices (as in [`Store::active_peers`],
    /// with the same `session`) of the users they name, from one snapshot: two statements
    /// in one read transaction.
    async fn egress_policy(&self, session: VpnSession) -> Result<EgressPolicy>;
    /// [`Store::egress_policy`] without the sources: every rule and the memberships of the
    /// groups they name, from one snapshot. The default action is the caller's.
    async fn egress_rules(&self) -> Result<EgressRules>;

    /// Every active device, as the data plane needs it, in no order: its owner is not
    /// disabled and, when `session` expires, never signed in or last signed in after
    /// `session.cutoff()` ([`VpnSession`]). One query.
    async fn active_peers(&self, session: VpnSession) -> Result<Vec<ActivePeer>>;
    /// Writes the statistics gateway `source` read (its id; the nil UUID for `serve`'s
    /// embedded gateway) to the devices with those public keys, in one transaction. A
    /// device's traffic grows by each counter's increase over the same source's previous
    /// report, or by the whole counter when it went down (the interface was recreated):
    /// summed across gateways, never backwards. The newest handshake and its address win.
    /// Reports of keys no device has are skipped. `updated_at` does not move: statistics are
    /// not an edit.
    async fn record_stats_from(&self, source: Uuid, reports: Vec<StatsReport>) -> Result<()>;
    /// [`Store::record_stats_from`] the embedded gateway.
    async fn record_stats(&self, reports: Vec<StatsReport>) -> Result<()> {
        self.record_stats_from(Uuid::nil(), reports).await
    }
    /// Runs until the store is closed, notifying `changes.peers` after changes to the
    /// peers and `changes.rules` after changes to the rules or memberships that other
    /// processes commit (this process notifies its own through the domain). It may notify
    /// more often than needed, never less.
    async fn watch_data_plane(&self, changes: DataPlaneChanges) -> Result<()>;
    /// Runs until the store is closed, notifying `changed` once when it starts watching
    /// (what was committed before was not heard) and after changes to the stored
    /// configuration (the `configuration.` settings rows) that any process commits. It may
    /// notify more often than needed, never less.
    async fn watch_configuration_changes(&self, changed: std::sync::Arc<tokio::sync::Notify>) -> Result<()>;

    /// Writes a whole imported installation in one transaction: all of it, or (on any
    /// error) nothing. With [`ImportMode::Fresh`] it refuses a database that holds users or
    /// devices ([`crate::error::DomainError::Invalid`] on `database`).
    async fn import(&self, batch: &ImportBatch, mode: ImportMode) -> Result<ImportOutcome>;
}

/// Which users a paged list returns (the console's user list, `GET /v0/users?limit=`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserQuery {
    /// Only users whose [`crate::model::email_key`] contains this text, already lower-cased.
    pub email_contains: Option<String>,
    /// Start after this `(inserted_at, id)` position.
    pub after: Option<(Timestamp, Uuid)>,
    /// At most this many rows.
    pub limit: u32,
}

/// A user in a list, with the device count the store keeps on its row (no devices read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedUser {
    pub user: User,
    pub device_count: u64,
}

/// What goes with a user when it is deleted: counts from one statement, each from an index.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Belongings {
    pub devices: u64,
    pub tokens: u64,
    pub rules: u64,
    pub sessions: u64,
}

/// The reads of the console's user pages (a part of every [`Store`]).
#[async_trait]
pub trait UserDirectory: Send + Sync + 'static {
    /// One page of users in `(inserted_at, id)` order.
    async fn list_users_page(&self, query: &UserQuery) -> Result<Vec<ListedUser>>;
    /// The user's sessions that have not expired by `now`, newest first.
    async fn list_user_sessions(&self, user_id: Uuid, now: Timestamp) -> Result<Vec<Session>>;
    /// What the user has; `None` when there is no such user.
    async fn user_belongings(&self, user_id: Uuid) -> Result<Option<Belongings>>;

    /// The users among `ids` that exist, in no particular order: one statement for a
    /// page's worth of ids (the audit page names the users of its events).
    async fn users_by_ids(&self, ids: &[Uuid]) -> Result<Vec<User>>;
}

/// The audit log ([`crate::audit`]), a part of every [`Store`]. The events of data changes
/// are appended by the store's own writes, inside their transactions; these methods append
/// the events that change no data (sign-ins) and read the log.
#[async_trait]
pub trait AuditLog: Send + Sync + 'static {
    /// Appends `events`, in order, in one transaction of their own.
    async fn append_audit_events(&self, events: &[NewAuditEvent]) -> Result<()>;
    /// Retention: removes up to `max` of the oldest events recorded before `before`, oldest
    /// first, and moves the head's `pruned_seq`/`pruned_hash` to the last one removed, in
    /// one transaction (verification then starts after it). Stops at the first event to
    /// keep. Returns how many were removed (0: nothing to do).
    async fn prune_audit_events(&self, before: Timestamp, max: u32) -> Result<u64>;
    /// The chain's head, after sealing the events committed so far.
    async fn audit_head(&self) -> Result<AuditHead>;
    /// The sealed events `query` selects, as stored (see [`EventRecord::decode`]), after
    /// sealing the events committed so far: a caller reads its own writes.
    async fn audit_records(&self, query: &AuditQuery) -> Result<Vec<EventRecord>>;

    /// Seals the committed events still pending (numbers and chains them), in batches,
    /// and returns how many. A backend that seals each event as it appends it (SQLite)
    /// has none.
    async fn seal_audit_events(&self) -> Result<u64> {
        Ok(0)
    }
    /// How many committed events wait to be sealed.
    async fn pending_audit_events(&self) -> Result<u64> {
        Ok(0)
    }
    /// Seals events as they are committed, by this process (at once) or by others (within
    /// a second), forever: a failed seal is logged and retried. A backend that seals as it
    /// appends has nothing to do and waits forever.
    async fn keep_audit_events_sealed(&self) {
        std::future::pending().await
    }
}

/// Webhook endpoints and their delivery state ([`crate::webhook`]), a part of every
/// [`Store`]. Creating, changing and deleting an endpoint appends its audit event in the
/// same transaction, with the actor of [`crate::audit::context::current`].
#[async_trait]
pub trait WebhookStore: Send + Sync + 'static {
    /// Inserts an endpoint whose cursor starts at the audit head: it receives the events
    /// committed after it.
    async fn insert_webhook(&self, webhook: &WebhookInsert) -> Result<Webhook>;
    /// Every endpoint, oldest first.
    async fn list_webhooks(&self) -> Result<Vec<Webhook>>;
    async fn webhook_by_id(&self, id: Uuid) -> Result<Option<Webhook>>;
    /// Applies `update`; `NotFound` when there is no such endpoint.
    async fn update_webhook(&self, id: Uuid, update: &WebhookUpdate, now: Timestamp) -> Result<Webhook>;
    /// Deletes an endpoint and its attempts; `false` when there was none.
    async fn delete_webhook(&self, id: Uuid) -> Result<bool>;
    /// The endpoint's last `limit` attempts, newest first.
    async fn webhook_attempts(&self, id: Uuid, limit: u32) -> Result<Vec<Attempt>>;

    /// Leases up to `limit` enabled endpoints that are due at `now`, have events after
    /// their cursor and are not leased by anyone else, to `owner` until `until`.
    async fn claim_webhooks(
        &self,
        owner: Uuid,
        now: Timestamp,
        until: Timestamp,
        limit: u32,
    ) -> Result<Vec<WebhookLease>>;
    /// Extends `owner`'s lease; `false` when it lost it (it expired and was taken).
    async fn renew_webhook_lease(&self, id: Uuid, owner: Uuid, until: Timestamp) -> Result<bool>;
    /// Records a step of delivery (the attempt, the cursor and the schedule) if `owner`
    /// still holds the lease, keeping the last [`crate::webhook::KEPT_ATTEMPTS`] attempts;
    /// `false` when it lost it, or when the step would move the cursor back (it was
    /// computed from a cursor that has moved on): nothing is recorded then.
    async fn record_webhook_progress(&self, id: Uuid, owner: Uuid, progress: &Progress) -> Result<bool>;
    /// Ends `owner`'s lease, so that the endpoint is due again at its next attempt time.
    async fn release_webhook_lease(&self, id: Uuid, owner: Uuid) -> Result<()>;
}

/// Sign-in links and the email outbox ([`crate::sign_in_link`], [`crate::email`]), a part
/// of every [`Store`]. Creating, revoking and using a link appends its audit event in the
/// same transaction.
#[async_trait]
pub trait LinkStore: Send + Sync + 'static {
    /// Inserts the link, after its new user (`user.created`) and before the email that
    /// carries it, in one transaction. `Conflict` when the new user's email is taken.
    async fn insert_sign_in_link(&self, insert: &LinkInsert) -> Result<()>;
    /// The links of `kind`, newest first, at most `limit`, with their users' emails and
    /// their emails' delivery.
    async fn list_sign_in_links(&self, kind: LinkKind, limit: u32) -> Result<Vec<ListedLink>>;
    /// The link whose secret hashes to `hash`, with its user.
    async fn sign_in_link_by_hash(&self, hash: &[u8]) -> Result<Option<(SignInLink, User)>>;
    /// Marks the link whose secret hashes to `hash` used at `now`, if it is unused,
    /// unrevoked and unexpired then, and returns it with its user; `None` otherwise.
    /// With `password` (the hash of a new one), the user's password is set in the same
    /// transaction, which ends the user's sessions as every password change does.
    async fn use_sign_in_link(
        &self,
        hash: &[u8],
        now: Timestamp,
        password: Option<String>,
    ) -> Result<Option<(SignInLink, User)>>;
    /// Revokes a pending invitation; `false` when there is no such one pending.
    async fn revoke_sign_in_link(&self, id: Uuid, now: Timestamp) -> Result<bool>;
    /// How many links of `kind` of the user are unused, unrevoked and unexpired at `now`.
    async fn live_sign_in_links(&self, user_id: Uuid, kind: LinkKind, now: Timestamp) -> Result<u64>;

    /// Leases up to `limit` messages due at `now` that nobody else holds, to `owner` until
    /// `until`.
    async fn claim_emails(&self, owner: Uuid, now: Timestamp, until: Timestamp, limit: u32) -> Result<Vec<EmailLease>>;
    /// Records an attempt on a message `owner` holds and ends the lease; `false` when it lost
    /// the lease (nothing is recorded then). A sent or given-up message is emptied.
    async fn record_email_attempt(&self, id: Uuid, owner: Uuid, outcome: &EmailOutcome) -> Result<bool>;
    /// Deletes up to `max` messages sent or given up before `before` and the links that
    /// expired before it; returns how many rows went.
    async fn prune_sign_in_links(&self, before: Timestamp, max: u32) -> Result<u64>;
}

/// The gateways' registry ([`crate::gateway`]), a part of every [`Store`]. Each write appends
/// its audit event in its transaction.
#[async_trait]
pub trait GatewayStore: Send + Sync + 'static {
    /// Inserts a gateway awaiting enrolment; a taken name is `Invalid` on `name`.
    async fn insert_gateway(&self, insert: &GatewayInsert) -> Result<()>;
    /// Every gateway, oldest first.
    async fn list_gateways(&self) -> Result<Vec<Gateway>>;
    async fn gateway_by_id(&self, id: Uuid) -> Result<Option<Gateway>>;
    /// Uses the enrolment token whose hash `enrolment` names, if it is unused, unexpired and
    /// its gateway not revoked, and stores the credential's hash in its place; the enrolled
    /// gateway, or `None`.
    async fn enrol_gateway(&self, enrolment: &Enrolment) -> Result<Option<Gateway>>;
    /// The gateway whose credential hashes to `hash` (never a revoked one).
    async fn gateway_by_credential(&self, hash: &[u8]) -> Result<Option<Gateway>>;
    /// Revokes a gateway: its token or credential stops working. `None` when there is no
    /// such gateway or it was revoked already.
    async fn revoke_gateway(&self, id: Uuid, now: Timestamp) -> Result<Option<Gateway>>;
    /// Renews the session `lease` names, or starts it when no other process holds a live
    /// one (appending `gateway.connected`).
    async fn hold_gateway_session(&self, lease: &Lease) -> Result<LeaseOutcome>;
    /// Ends the session `lease` names (appending `gateway.disconnected`, stopped); whether
    /// it was held.
    async fn release_gateway_session(&self, lease: &Lease) -> Result<bool>;
    /// Ends every session with no poll since `before` (appending `gateway.disconnected`,
    /// lost, for each); the gateways whose session ended.
    async fn end_lapsed_gateway_sessions(&self, before: Timestamp) -> Result<Vec<Gateway>>;
    /// The users who are not disabled and signed in after `cutoff`, with that sign-in:
    /// the starts of the VPN sessions that have not expired.
    async fn vpn_session_starts(&self, cutoff: Timestamp) -> Result<Vec<(Uuid, Timestamp)>>;
}

/// What adding a member did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberAdded {
    Added,
    /// The user was a member already: nothing changed.
    AlreadyMember,
    NoSuchGroup,
    NoSuchUser,
}

/// Groups of users ([`crate::group`]), a part of every [`Store`]. Each write appends its
/// audit event in its transaction.
#[async_trait]
pub trait GroupStore: Send + Sync + 'static {
    /// Inserts a group; a name taken whatever its case is `Invalid` on `name`.
    async fn insert_group(&self, group: &Group) -> Result<()>;
    /// Every group, by name.
    async fn list_groups(&self) -> Result<Vec<Group>>;
    async fn group_by_id(&self, id: Uuid) -> Result<Option<Group>>;
    /// Writes a group's name and description; the group as it is now, or `None` when there
    /// is no such group. A taken name is `Invalid` on `name`.
    async fn update_group(&self, update: &GroupUpdate) -> Result<Option<Group>>;
    /// Deletes a group and its memberships; the group as it was, or `None`.
    async fn delete_group(&self, id: Uuid) -> Result<Option<Group>>;
    /// A group's members, by email; `None` when there is no such group.
    async fn group_members(&self, id: Uuid) -> Result<Option<Vec<Member>>>;
    /// `user`'s membership of `group`, if there is one.
    async fn group_member(&self, group: Uuid, user: Uuid) -> Result<Option<Member>>;
    /// Makes `user` a member of `group` (a membership from `source`).
    async fn add_group_member(&self, group: Uuid, user: Uuid, source: &str, now: Timestamp) -> Result<MemberAdded>;
    /// Ends `user`'s membership of `group`; whether there was one.
    async fn remove_group_member(&self, group: Uuid, user: Uuid) -> Result<bool>;
    /// The groups `user` is a member of, by name (none for an unknown user).
    async fn user_groups(&self, user: Uuid) -> Result<Vec<Group>>;
    /// Makes `user`'s memberships from `source` (an identity provider) exactly the groups
    /// named `names`, in one transaction: groups of those names that do not exist are made
    /// (with `source`), memberships from `source` of groups not named end, and those named
    /// begin (a membership the user has already, made by hand, stays as it is). Nothing for
    /// an unknown user. Every change is audited.
    async fn sync_user_groups(&self, user: Uuid, source: &str, names: &[String], now: Timestamp) -> Result<GroupSync>;
}

/// SCIM provisioning ([`crate::scim`]), a part of every [`Store`]: the provisioning tokens,
/// and the reads and group writes of `/scim/v2`. The user writes run in the rules
/// ([`crate::rules::scim`]), on [`crate::rules::tx::WriteTx`].
#[async_trait]
pub trait ScimStore: Send + Sync + 'static {
    /// Stores a new token; records `scim_token.created`.
    async fn insert_scim_token(&self, token: &ScimToken) -> Result<()>;
    /// The token whose secret hashes to `hash`, revoked or not.
    async fn scim_token_by_hash(&self, hash: &[u8]) -> Result<Option<ScimToken>>;
    /// Every token, newest first.
    async fn list_scim_tokens(&self) -> Result<Vec<ScimToken>>;
    /// Revokes a token (once: a revoked one keeps its first time); records
    /// `scim_token.revoked`. `None` when there is no such token.
    async fn revoke_scim_token(&self, id: Uuid, now: Timestamp) -> Result<Option<ScimToken>>;
    /// Records that the token was used at `now` (no audit event).
    async fn touch_scim_token(&self, id: Uuid, now: Timestamp) -> Result<()>;

    /// [`crate::rules::scim::create_in`] in a transaction of its own.
    async fn create_scim_user(&self, write: &ScimUserWrite, now: Timestamp) -> Result<ScimUser>;
    /// [`crate::rules::scim::replace_in`] in a transaction of its own.
    async fn replace_scim_user(&self, id: Uuid, write: &ScimUserWrite, now: Timestamp) -> Result<ScimUser>;
    /// [`crate::rules::scim::delete_in`] in a transaction of its own.
    async fn delete_scim_user(&self, id: Uuid, now: Timestamp) -> Result<User>;

    /// One page of the SCIM users `filter` selects, in the order they were provisioned (for
    /// every user, [`Self::every_scim_user`] is the cheaper read).
    async fn scim_users(&self, filter: &UserFilter, page: Page) -> Result<Listed<ScimUser>>;
    /// `count` SCIM users from `start`, in the order they were provisioned, with their
    /// total and generation as of the same read.
    async fn every_scim_user(&self, count: u32, start: Start) -> Result<UsersPage>;
    async fn scim_user(&self, id: Uuid) -> Result<Option<ScimUser>>;
    /// One page of the SCIM groups (source `scim`) `filter` selects, by name.
    async fn scim_groups(&self, filter: &GroupFilter, page: Page) -> Result<Listed<ScimGroup>>;
    async fn scim_group(&self, id: Uuid) -> Result<Option<ScimGroup>>;
    /// The SCIM members (memberships of source `scim`) of each of `groups`, by user.
    async fn scim_members(&self, groups: &[Uuid]) -> Result<Vec<(Uuid, ScimMember)>>;
    /// Makes the SCIM group `name`, or takes over a group of that name not kept by SCIM yet
    /// (its source becomes `scim`; its other memberships stay), with `external_id` and
    /// `members`. `Invalid` on `name` when a SCIM group has that name; a member that is
    /// not a SCIM user is `Invalid` on `members`.
    async fn create_scim_group(
        &self,
        group: &Group,
        external_id: Option<&str>,
        members: &[Uuid],
    ) -> Result<(ScimGroup, MembersChanged)>;
    /// Applies `write` onto the SCIM group `id`, in one transaction; `None` when there is no
    /// such SCIM group.
    async fn write_scim_group(
        &self,
        id: Uuid,
        write: &ScimGroupWrite,
        now: Timestamp,
    ) -> Result<Option<(ScimGroup, MembersChanged)>>;
}
