//! Invitations and magic links (docs/design/invitations.md): an administrator invites
//! someone by email; anyone whose account may sign in with a password asks for a link by
//! email instead. Both are sign-in links ([`crate::sign_in_link`]).

use std::net::IpAddr;

use uuid::Uuid;
use zeroize::Zeroizing;

use super::throttle::Refused;
use super::totp::PasswordChecked;
use super::{Domain, Principal};
use crate::crypto::{hash_password, hash_session_secret, random_secret};
use crate::email::{self, Message, QueuedEmail};
use crate::error::{DomainError, Errors, Result};
use crate::model::{email_key, Role, User};
use crate::sign_in_link::{
    LinkInsert, LinkKind, LinkStatus, ListedLink, SignInLink, INVITATION_HOURS, LINK_PATH, MAGIC_LINK_SECS,
    MAX_INVITATION_HOURS, MAX_LIVE_MAGIC_LINKS,
};
use crate::time::Timestamp;
use crate::validate::user::{is_email, password_problem};

/// The `last_signed_in_method` of a magic-link sign-in (Firezone's name).
pub const MAGIC_LINK_METHOD: &str = "magic_link";
/// The `last_signed_in_method` of the sign-in that accepts an invitation.
pub const INVITATION_METHOD: &str = "invitation";
/// Why an invitation cannot be emailed.
pub const NO_EMAIL: &str = "cannot be sent: this server has no SMTP server configured (FERROZONE_SMTP_HOST)";
/// Why a disabled user cannot be invited.
pub const DISABLED: &str = "belongs to a disabled user; enable the user first";
/// The most invitations a list shows.
pub const LIST_LIMIT: u32 = 500;

/// An invitation as asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewInvitation {
    pub email: Option<String>,
    /// The role of a user created for it (an existing user keeps theirs); default
    /// unprivileged.
    pub role: Option<Role>,
    /// Send it by email; default: when an SMTP server is configured.
    pub send_email: Option<bool>,
    /// Its lifetime, 1 to [`MAX_INVITATION_HOURS`]; default [`INVITATION_HOURS`].
    pub expires_in_hours: Option<i64>,
    /// Attributes sent with a JSON type they cannot have.
    pub wrong_types: crate::input::WrongTypes,
}

/// An invitation just created: its link (shown this once), and whether a user was created
/// for it and an email queued.
pub struct Invitation {
    pub link: SignInLink,
    pub email: String,
    pub url: Zeroizing<String>,
    pub user_created: bool,
    pub emailed: bool,
}

/// What asking for a magic link came to. The page says the same in every case but the
/// throttle's, so that it tells nobody whether an account exists.
#[derive(Debug, PartialEq, Eq)]
pub enum MagicLinkRequest {
    /// A link was queued, or nothing was (no such account, one that cannot use a link, or
    /// too many live links): the same answer.
    Accepted,
    Throttled(Refused),
}

impl Domain {
    /// Whether email can be sent (an SMTP server is configured).
    pub fn email_enabled(&self) -> bool {
        self.settings().email_enabled
    }

    /// Whether the sign-in page offers magic links: email can be sent and password sign-in
    /// is on (a magic link stands in for the password).
    pub fn magic_links_enabled(&self) -> bool {
        self.email_enabled() && self.local_auth_enabled()
    }

    /// Invites someone to the site at `site` (the external URL): creates the user (or
    /// reuses the one with that email) and a single-use link, emailed unless asked not to.
    pub async fn invite(&self, actor: &Principal, input: &NewInvitation, site: &str) -> Result<Invitation> {
        actor.require_admin()?;
        let checked = self.check_invitation(input)?;
        let now = Timestamp::now();
        let existing = self.user_with_email(&checked.email).await?;
        if existing.as_ref().is_some_and(|user| user.disabled_at.is_some()) {
            return Err(DomainError::invalid("email", DISABLED));
        }
        let new_user = existing.is_none().then(|| User::new(checked.email.clone(), checked.role, None, now));
        let user = existing.as_ref().or(new_user.as_ref()).cloned().ok_or(DomainError::NotFound)?;
        let secret = random_secret();
        let url = Zeroizing::new(link_url(site, &secret));
        let expires_at = now.plus_secs(checked.hours * 3600);
        let inviter = match actor.user_id {
            Some(id) => self.store().user_by_id(id).await?.map(|u| u.email),
            None => None,
        };
        let message = checked.send_email.then(|| {
            let inviter = inviter.as_deref().unwrap_or("An administrator");
            email::invitation(&user.email, inviter, site, &url, expires_at)
        });
        let link = self
            .insert_link(LinkKind::Invitation, &user, actor.user_id, &secret, expires_at, new_user, message)
            .await?;
        tracing::info!(link.id = %link.id, user.id = %user.id, emailed = checked.send_email, "invitation created");
        Ok(Invitation {
            emailed: link.email_id.is_some(),
            user_created: existing.is_none(),
            email: user.email,
            link,
            url,
        })
    }

    /// The newest invitations, with their users' emails and their emails' delivery.
    pub async fn list_invitations(&self, actor: &Principal) -> Result<Vec<ListedLink>> {
        actor.require_admin()?;
        self.store().list_sign_in_links(LinkKind::Invitation, LIST_LIMIT).await
    }

    /// Revokes a pending invitation; `NotFound` when there is no pending one with `id`.
    pub async fn revoke_invitation(&self, actor: &Principal, id: Uuid) -> Result<()> {
        actor.require_admin()?;
        if !self.store().revoke_sign_in_link(id, Timestamp::now()).await? {
            return Err(DomainError::NotFound);
        }
        tracing::info!(link.id = %id, "invitation revoked");
        Ok(())
    }

    /// Asks for a magic link for `email` from `address`, to the site at `site`. Counted
    /// against the account's sign-in throttle and never forgiven: a link request costs an
    /// attempt whatever comes of it. A link is queued only for an account that exists, is
    /// not disabled and has fewer than [`MAX_LIVE_MAGIC_LINKS`] live links, and only while
    /// magic links are on.
    pub async fn request_magic_link(&self, email: &str, address: IpAddr, site: &str) -> Result<MagicLinkRequest> {
        if !self.magic_links_enabled() {
            return Err(DomainError::Disallowed(super::sessions::LOCAL_AUTH_OFF));
        }
        if let Err(refused) = self.throttle.reserve(&email_key(email), address) {
            return Ok(MagicLinkRequest::Throttled(refused));
        }
        let Some(user) = self.user_with_email(email).await?.filter(|u| u.disabled_at.is_none()) else {
            return Ok(MagicLinkRequest::Accepted);
        };
        let now = Timestamp::now();
        if self.store().live_sign_in_links(user.id, LinkKind::MagicLink, now).await? >= MAX_LIVE_MAGIC_LINKS {
            tracing::info!(user.id = %user.id, "magic link not sent: too many live ones");
            return Ok(MagicLinkRequest::Accepted);
        }
        let secret = random_secret();
        let message = email::magic_link(&user.email, site, &link_url(site, &secret), MAGIC_LINK_SECS / 60);
        let expires_at = now.plus_secs(MAGIC_LINK_SECS);
        self.insert_link(LinkKind::MagicLink, &user, None, &secret, expires_at, None, Some(message)).await?;
        Ok(MagicLinkRequest::Accepted)
    }

    /// The live link with `secret` and its user (for the page that asks to use it);
    /// `None` when it is unknown, used, revoked or expired, its user is disabled, or its
    /// user signed in since it was made ([`SignInLink::spent_by`]).
    pub async fn live_sign_in_link(&self, secret: &str) -> Result<Option<(SignInLink, User)>> {
        let found = self.store().sign_in_link_by_hash(&hash_session_secret(secret)).await?;
        let now = Timestamp::now();
        Ok(found.filter(|(link, user)| {
            link.status(now) == LinkStatus::Pending
                && user.disabled_at.is_none()
                && !link.spent_by(user.last_signed_in_at)
        }))
    }

    /// Signs in with the link `secret`, using it up; with `password` (an invitation
    /// accepted with a new password, checked as a user's password is) the password is set
    /// in the same step. `Ok(None)` when the link is not live, or its user is disabled.
    /// An authenticator, or a required one, still comes next ([`PasswordChecked`]).
    pub async fn sign_in_with_link(
        &self,
        secret: &str,
        password: Option<(&str, &str)>,
    ) -> Result<Option<PasswordChecked>> {
        let Some((link, _)) = self.live_sign_in_link(secret).await? else { return Ok(None) };
        if link.kind == LinkKind::MagicLink && !self.magic_links_enabled() {
            return Err(DomainError::Disallowed(super::sessions::LOCAL_AUTH_OFF));
        }
        let password_hash = match password {
            Some((password, confirmation)) => Some(self.new_password_hash(password, confirmation).await?),
            None => None,
        };
        let hash = hash_session_secret(secret);
        let Some((link, user)) = self.store().use_sign_in_link(&hash, Timestamp::now(), password_hash).await? else {
            return Ok(None);
        };
        if user.disabled_at.is_some() {
            return Ok(None);
        }
        let method = match link.kind {
            LinkKind::Invitation => INVITATION_METHOD,
            LinkKind::MagicLink => MAGIC_LINK_METHOD,
        };
        tracing::info!(link.id = %link.id, user.id = %user.id, method, "sign-in link used");
        Ok(Some(self.after_first_factor(user, method).await?))
    }

    /// The argon2 hash of a new password, checked (length, confirmation) as `POST
    /// /v0/users` checks one.
    async fn new_password_hash(&self, password: &str, confirmation: &str) -> Result<String> {
        let mut errors = Errors::default();
        if let Some(problem) = password_problem(password) {
            errors.add("password", problem);
        } else if password != confirmation {
            errors.add("password_confirmation", "does not match password");
        }
        errors.finish(())?;
        let password = Zeroizing::new(password.to_owned());
        Ok(self.passwords.run(move || hash_password(&password)).await??)
    }

    fn check_invitation(&self, input: &NewInvitation) -> Result<CheckedInvitation> {
        let mut c = crate::validate::input::Check::new(&input.wrong_types);
        let email = match c.trimmed("email", input.email.as_deref()) {
            Some(Some(email)) if is_email(email) => email.to_owned(),
            Some(Some(_)) => {
                c.add("email", crate::validate::user::INVALID_EMAIL);
                String::new()
            }
            Some(None) => {
                c.add("email", crate::validate::CANT_BE_BLANK);
                String::new()
            }
            None => String::new(),
        };
        let role = if c.wrong_type("role") { Role::Unprivileged } else { input.role.unwrap_or(Role::Unprivileged) };
        let send_email = c.flag("send_email", input.send_email).unwrap_or(self.email_enabled());
        if send_email && !self.email_enabled() {
            c.add("send_email", NO_EMAIL);
        }
        let hours = if c.wrong_type("expires_in_hours") {
            0
        } else {
            let hours = input.expires_in_hours.unwrap_or(i64::from(INVITATION_HOURS));
            if !(1..=i64::from(MAX_INVITATION_HOURS)).contains(&hours) {
                c.add("expires_in_hours", format!("must be between 1 and {MAX_INVITATION_HOURS}"));
            }
            hours
        };
        c.finish(CheckedInvitation { email, role, send_email, hours })
    }

    /// Stores a link of `kind` for `user` (created first when `new_user`), with `message`
    /// sealed into the outbox when there is one.
    #[allow(clippy::too_many_arguments)]
    async fn insert_link(
        &self,
        kind: LinkKind,
        user: &User,
        created_by: Option<Uuid>,
        secret: &str,
        expires_at: Timestamp,
        new_user: Option<User>,
        message: Option<Message>,
    ) -> Result<SignInLink> {
        let now = Timestamp::now();
        let email = match message {
            Some(message) => Some(QueuedEmail {
                id: Uuid::now_v7(),
                recipient: message.to.clone(),
                message: self.cipher().seal(&serde_json::to_vec(&message).map_err(anyhow::Error::from)?),
                now,
            }),
            None => None,
        };
        let link = SignInLink {
            id: Uuid::now_v7(),
            user_id: user.id,
            kind,
            created_by,
            email_id: email.as_ref().map(|e| e.id),
            inserted_at: now,
            expires_at,
            used_at: None,
            revoked_at: None,
        };
        let insert = LinkInsert { link, secret_hash: hash_session_secret(secret).to_vec(), new_user, email };
        self.store().insert_sign_in_link(&insert).await?;
        if insert.email.is_some() {
            self.mail_queued.notify_one();
        }
        Ok(insert.link)
    }
}

struct CheckedInvitation {
    email: String,
    role: Role,
    send_email: bool,
    hours: i64,
}

/// The URL of the link with `secret` on the site at `site`.
pub fn link_url(site: &str, secret: &str) -> String {
    format!("{}{LINK_PATH}{secret}", site.trim_end_matches('/'))
}
