//! The audit log: who changed what, from where and when, as events chained by a MAC.
//!
//! Each change is recorded by the store in the transaction of the change itself, so an
//! event exists exactly when its change was committed. Events are numbered (`seq`) with no
//! gap, and a later seq is always sealed later, so a reader following the log by seq
//! misses nothing. On SQLite the one writer numbers each event as it appends it. On
//! PostgreSQL an event is appended *pending* (no seq, not yet chained), so that writers
//! never wait for each other, and a sealer numbers and chains the committed pending events
//! in batches soon after, holding the chain's head row; every read of the log seals first
//! (see the store's `audit` module for PostgreSQL).
//!
//! Each event carries `hash = HMAC-SHA256(key, prev_hash || fields)` where `prev_hash` is
//! the previous event's hash and the key is derived from the secret key file, which is not
//! in the database ([`AuditKey`]). Someone who can only write to the database cannot make a
//! chain that verifies after editing, deleting or reordering events: [`verify`] finds the
//! first event that breaks it.

use std::fmt;

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use uuid::Uuid;
use zeroize::Zeroizing;

use crate::crypto::Cipher;
use crate::time::Timestamp;

pub mod chain;
pub mod changes;
pub mod context;
pub mod head;
pub mod view;

pub use chain::{verify, verify_log, Break, ChainStart, Verified, Verifier};
pub use head::{pruned_event, AuditHead, SealState, PRUNED_ACTION};
pub use view::EventView;

/// The MAC key of the chain, derived from the secret key. Every process sharing a database
/// uses the same secret key, and so the same chain key.
#[derive(Clone)]
pub struct AuditKey(Zeroizing<[u8; 32]>);

impl AuditKey {
    /// The purpose [`Cipher::derive_key`] derives the chain key for.
    const PURPOSE: &'static str = "audit chain";

    pub fn from_cipher(cipher: &Cipher) -> Self {
        Self(cipher.derive_key(Self::PURPOSE))
    }

    /// A fixed key, for tests and tools that open a store without the secret key: a chain
    /// made with it proves nothing against someone who can write the database.
    pub fn unkeyed() -> Self {
        Self(Zeroizing::new([0; 32]))
    }

    /// A fingerprint of `value` for `purpose`: the first 16 bytes of an HMAC under this key,
    /// in hex. Equal values give equal fingerprints, so a change shows; without the key a
    /// fingerprint cannot be tested against guessed values.
    pub fn fingerprint(&self, purpose: &str, value: &[u8]) -> String {
        let mut mac = self.mac();
        mac.update(b"ferrozone fingerprint\0");
        mac.update(purpose.as_bytes());
        mac.update(&[0]);
        mac.update(value);
        hex::encode(&mac.finalize().into_bytes()[..16])
    }

    pub(crate) fn mac(&self) -> Hmac<Sha256> {
        <Hmac<Sha256> as Mac>::new_from_slice(self.0.as_ref()).unwrap_or_else(|_| unreachable!("HMAC takes any key"))
    }
}

impl Default for AuditKey {
    fn default() -> Self {
        Self::unkeyed()
    }
}

impl PartialEq for AuditKey {
    fn eq(&self, other: &Self) -> bool {
        use subtle::ConstantTimeEq;
        self.0.as_ref().ct_eq(other.0.as_ref()).into()
    }
}

impl Eq for AuditKey {}

impl fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AuditKey(..)")
    }
}

/// What kind of party acted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ActorKind {
    /// A request with an API token (`id`: the token's id; `user_id`: its owner).
    Token,
    /// A request with a web session (`id`: the session's id; `user_id`: its user).
    Session,
    /// A user acting for themself before any session exists: signing in (`user_id`).
    User,
    /// The `ferrozone` command line, run by whoever can read the data directory.
    Cli,
    /// An identity provider (`id`: the provider's id), as when a sign-in creates a user.
    Provider,
    /// Ferrozone itself, as when a provider refresh disables a user.
    System,
    /// A SCIM client, the directory (`id`: its provisioning token's id).
    Scim,
    /// Nobody known: a refused sign-in.
    Anonymous,
}

impl ActorKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Token => "token",
            Self::Session => "session",
            Self::User => "user",
            Self::Cli => "cli",
            Self::Provider => "provider",
            Self::System => "system",
            Self::Scim => "scim",
            Self::Anonymous => "anonymous",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [Self::Token, Self::Session, Self::User, Self::Cli, Self::Provider, Self::System, Self::Scim, Self::Anonymous]
            .into_iter()
            .find(|kind| kind.as_str() == text)
    }
}

/// Who acted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Actor {
    pub kind: ActorKind,
    /// The token's, session's or provider's id.
    pub id: Option<String>,
    /// The user on whose behalf, when there is one.
    pub user_id: Option<Uuid>,
}

impl Actor {
    pub fn cli() -> Self {
        Self { kind: ActorKind::Cli, id: None, user_id: None }
    }

    pub fn system() -> Self {
        Self { kind: ActorKind::System, id: None, user_id: None }
    }

    pub fn anonymous() -> Self {
        Self { kind: ActorKind::Anonymous, id: None, user_id: None }
    }
}

/// What the event is about: a kind (`user`, `device`, `token`, `session`, `rule`,
/// `configuration`, `webhook`, ...) and its id, when it has one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Subject {
    pub kind: String,
    pub id: Option<String>,
}

impl Subject {
    /// A subject of `kind` with the id `id`.
    pub fn new(kind: &str, id: impl fmt::Display) -> Self {
        Self { kind: kind.to_owned(), id: Some(id.to_string()) }
    }
}

/// What a write changed, before the store adds who did it and from where
/// ([`context::Context::event`]): the action, its subject and the changed fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub action: &'static str,
    pub subject: Subject,
    pub changes: Vec<Change>,
}

impl Entry {
    pub fn new(action: &'static str, subject: Subject, changes: Vec<Change>) -> Self {
        Self { action, subject, changes }
    }
}

/// One field's change. A secret (a key, a password, a token) is only named: `secret` is
/// true and neither value is kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Change {
    pub field: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub secret: bool,
}

impl Change {
    /// A field whose value may be shown.
    pub fn value(field: &str, before: Option<serde_json::Value>, after: Option<serde_json::Value>) -> Self {
        Self { field: field.to_owned(), before, after, secret: false }
    }

    /// A secret field that changed, named without its values.
    pub fn secret(field: &str) -> Self {
        Self { field: field.to_owned(), before: None, after: None, secret: true }
    }
}

/// Where a request came from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Origin {
    /// The client's address, as the server saw it (after trusted proxies).
    pub client_address: Option<String>,
    /// The request id of the request's log lines (`x-request-id`).
    pub request_id: Option<String>,
}

/// An event to append: the store numbers and chains it.
#[derive(Debug, Clone, PartialEq)]
pub struct NewAuditEvent {
    pub id: Uuid,
    pub at: Timestamp,
    pub actor: Actor,
    /// What happened: `<subject kind>.<verb>`, as `device.created` or `user.signed_in`.
    pub action: String,
    pub subject: Subject,
    pub changes: Vec<Change>,
    pub origin: Origin,
}

impl NewAuditEvent {
    /// An event now, with a fresh id and no changes. The id is a UUIDv7 (time-ordered), as
    /// device ids are: each append then adds to the last leaf of the unique index on ids
    /// instead of a random one, which would be another page for every commit to write
    /// (docs/benchmarks.md, "Where the time goes").
    pub fn new(actor: Actor, action: &str, subject: Subject, origin: Origin) -> Self {
        Self {
            id: Uuid::now_v7(),
            at: Timestamp::now(),
            actor,
            action: action.to_owned(),
            subject,
            changes: Vec::new(),
            origin,
        }
    }

    pub fn with_changes(mut self, changes: Vec<Change>) -> Self {
        self.changes = changes;
        self
    }
}

/// A recorded event, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEvent {
    /// Its place in the chain: 1, 2, 3, ... in the order events were sealed (on SQLite,
    /// commit order; on PostgreSQL, the order a sealer found them committed).
    pub seq: i64,
    pub event: NewAuditEvent,
    pub prev_hash: [u8; 32],
    pub hash: [u8; 32],
}

/// The columns of an event as the store keeps them: the text the chain's MAC covers.
/// Both backends store exactly these strings, so [`EventRecord::hash`] recomputes from
/// what was read, with no re-encoding that could differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRecord {
    pub seq: i64,
    pub id: Uuid,
    pub at: i64,
    pub actor_kind: String,
    pub actor_id: Option<String>,
    pub actor_user_id: Option<Uuid>,
    pub action: String,
    pub subject_kind: String,
    pub subject_id: Option<String>,
    /// The changes as a JSON array.
    pub changes: String,
    pub client_address: Option<String>,
    pub request_id: Option<String>,
    pub prev_hash: Vec<u8>,
    pub hash: Vec<u8>,
}

impl EventRecord {
    /// The record of `event` at `seq` after `prev_hash`, with its hash.
    pub fn seal(key: &AuditKey, seq: i64, prev_hash: [u8; 32], event: &NewAuditEvent) -> Self {
        let mut record = Self::pending(event);
        record.chain(key, seq, prev_hash);
        record
    }

    /// The record of `event` before it has a place in the chain: seq 0, no hashes. A
    /// backend that appends without taking the chain's head (PostgreSQL) stores this and
    /// seals it later with [`Self::chain`].
    pub fn pending(event: &NewAuditEvent) -> Self {
        let changes = serde_json::to_string(&event.changes).unwrap_or_else(|_| "[]".to_owned());
        Self {
            seq: 0,
            id: event.id,
            at: event.at.micros(),
            actor_kind: event.actor.kind.as_str().to_owned(),
            actor_id: event.actor.id.clone(),
            actor_user_id: event.actor.user_id,
            action: event.action.clone(),
            subject_kind: event.subject.kind.clone(),
            subject_id: event.subject.id.clone(),
            changes,
            client_address: event.origin.client_address.clone(),
            request_id: event.origin.request_id.clone(),
            prev_hash: Vec::new(),
            hash: Vec::new(),
        }
    }

    /// Gives the record its place: `seq`, after the event whose hash is `prev_hash`, and
    /// the hash that covers both and every field as stored.
    pub fn chain(&mut self, key: &AuditKey, seq: i64, prev_hash: [u8; 32]) {
        self.seq = seq;
        self.prev_hash = prev_hash.to_vec();
        self.hash = self.hash(key).to_vec();
    }

    /// The MAC over `prev_hash` and every field, each length-prefixed (an absent value is
    /// distinct from an empty one), as stored.
    pub fn hash(&self, key: &AuditKey) -> [u8; 32] {
        let mut mac = key.mac();
        mac.update(b"ferrozone audit v1\0");
        mac.update(&self.prev_hash);
        mac.update(&self.seq.to_be_bytes());
        mac.update(self.id.as_bytes());
        mac.update(&self.at.to_be_bytes());
        let user_id = self.actor_user_id.map(|id| id.to_string());
        for field in [
            Some(self.actor_kind.as_str()),
            self.actor_id.as_deref(),
            user_id.as_deref(),
            Some(self.action.as_str()),
            Some(self.subject_kind.as_str()),
            self.subject_id.as_deref(),
            Some(self.changes.as_str()),
            self.client_address.as_deref(),
            self.request_id.as_deref(),
        ] {
            match field {
                None => mac.update(&[0]),
                Some(text) => {
                    mac.update(&[1]);
                    mac.update(&(text.len() as u64).to_be_bytes());
                    mac.update(text.as_bytes());
                }
            }
        }
        mac.finalize().into_bytes().into()
    }

    /// The event this record holds; `None` when a column does not decode (an edited row,
    /// which [`verify`] reports).
    pub fn decode(&self) -> Option<AuditEvent> {
        let event = NewAuditEvent {
            id: self.id,
            at: Timestamp::from_micros(self.at),
            actor: Actor {
                kind: ActorKind::parse(&self.actor_kind)?,
                id: self.actor_id.clone(),
                user_id: self.actor_user_id,
            },
            action: self.action.clone(),
            subject: Subject { kind: self.subject_kind.clone(), id: self.subject_id.clone() },
            changes: serde_json::from_str(&self.changes).ok()?,
            origin: Origin { client_address: self.client_address.clone(), request_id: self.request_id.clone() },
        };
        Some(AuditEvent {
            seq: self.seq,
            event,
            prev_hash: self.prev_hash.as_slice().try_into().ok()?,
            hash: self.hash.as_slice().try_into().ok()?,
        })
    }
}

/// Which events a read returns, and in which order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditQuery {
    /// Newest first, starting before this seq (a page cursor); `None`: from the newest.
    pub before_seq: Option<i64>,
    /// Oldest first, starting after this seq (delivery and verification read this way).
    /// When set, `before_seq` is ignored.
    pub after_seq: Option<i64>,
    pub actor_kind: Option<ActorKind>,
    pub actor_id: Option<String>,
    /// Events of actions taken on behalf of this user.
    pub actor_user_id: Option<Uuid>,
    pub subject_kind: Option<String>,
    pub subject_id: Option<String>,
    /// An exact action (`device.created`), or a prefix ending with `.` (`device.`).
    pub action: Option<String>,
    /// At or after this time.
    pub since: Option<Timestamp>,
    /// Before this time.
    pub until: Option<Timestamp>,
    pub limit: u32,
}
