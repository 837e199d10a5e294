//! `ferrozone user …` and `ferrozone token …`: the local operator's commands. They go
//! through the same use cases as the API, acting as an admin.

use std::io::BufRead;

use anyhow::{bail, Context};
use ferrozone_domain::input::NewUser;
use ferrozone_domain::model::DisabledBy;
use ferrozone_domain::validate::TAKEN;
use ferrozone_domain::{Domain, DomainError, Principal, Role};
use zeroize::Zeroizing;

use super::explain::{explain, no_user};
use super::user_edit;
use crate::cli::{RoleArg, TokenCommand, UserCommand};
use crate::config::Config;
use crate::startup::open_domain;

pub async fn user(config: &Config, cmd: UserCommand) -> anyhow::Result<()> {
    let domain = open_domain(config).await?;
    let operator = Principal::operator();
    match cmd {
        UserCommand::Create { email, role, password_stdin } => {
            let role = role_of(role);
            let password = if password_stdin { Some(read_password()?) } else { None };
            let input = NewUser {
                email: Some(email.clone()),
                role: Some(role),
                password_confirmation: password.clone(),
                password,
                ..NewUser::default()
            };
            let user = domain.create_user(&operator, &input).await.map_err(|e| create_refused(e, &email))?;
            println!("{}", user.id);
        }
        UserCommand::List => {
            for u in domain.list_users(&operator).await.map_err(|e| explain(e, "the user"))? {
                let disabled = u.disabled_at.map_or_else(|| "-".to_owned(), |t| t.to_string());
                let by = u.disabled_by.as_ref().map_or_else(|| "-".to_owned(), disabled_by);
                println!("{}\t{}\t{}\tdisabled:{}\tby:{}", u.id, u.email, u.role.as_str(), disabled, by);
            }
        }
        UserCommand::Disable { email } => set_disabled(&domain, &email, true).await?,
        UserCommand::Enable { email } => set_disabled(&domain, &email, false).await?,
        UserCommand::SignOut { email } => {
            let (user, ended) = domain.sign_out_everywhere(&email).await.map_err(|e| match e {
                DomainError::NotFound => no_user(&email),
                other => explain(other, "the user"),
            })?;
            eprintln!("ended {ended} session(s) of {} ({})", user.email, user.id);
        }
        UserCommand::SetPassword { email, password_stdin: _ } => {
            user_edit::set_password(&domain, &email, read_password()?).await?
        }
        UserCommand::SetRole { email, role } => user_edit::set_role(&domain, &email, role_of(role)).await?,
        UserCommand::Delete { email, yes } => user_edit::delete(&domain, &email, yes).await?,
    }
    Ok(())
}

/// Why `user create` failed, in words; for an email that is taken, the commands that
/// change the user who has it.
fn create_refused(e: DomainError, email: &str) -> anyhow::Error {
    let taken =
        matches!(&e, DomainError::Invalid(errors) if errors.get("email").is_some_and(|m| m.iter().any(|m| m == TAKEN)));
    if !taken {
        return explain(e, "the user");
    }
    anyhow::anyhow!(
        "a user with email {email:?} already exists; to change it, use \
         `ferrozone user set-password --email {email} --password-stdin` or \
         `ferrozone user set-role --email {email} --role admin|unprivileged`"
    )
}

/// `user disable` / `user enable`, the operator's side of the use case the API and the
/// console share: says what happened on standard error, and succeeds when the user
/// already was in the asked state.
async fn set_disabled(domain: &Domain, email: &str, disabled: bool) -> anyhow::Result<()> {
    let (user, changed) =
        domain.set_user_disabled(&Principal::operator(), email, disabled).await.map_err(|e| match e {
            DomainError::NotFound => no_user(email),
            other => explain(other, "the user"),
        })?;
    let who = format!("{} ({})", user.email, user.id);
    match (user.disabled_at, changed) {
        (Some(_), true) => eprintln!("disabled {who}: its API tokens are refused until `ferrozone user enable`"),
        (Some(since), false) => {
            let by = user.disabled_by.as_ref().map(|by| format!(", by {}", disabled_by(by))).unwrap_or_default();
            eprintln!("{who} was already disabled (since {since}{by}); nothing changed")
        }
        (None, true) => eprintln!("enabled {who}"),
        (None, false) => eprintln!("{who} is not disabled; nothing changed"),
    }
    Ok(())
}

/// Who disabled a user, as `user list` and `user disable` print it: `admin`, `cli`, or
/// `identity_provider:<provider id>`.
fn disabled_by(by: &DisabledBy) -> String {
    match by.provider_id() {
        Some(provider) => format!("{}:{provider}", by.as_str()),
        None => by.as_str().to_owned(),
    }
}

pub async fn token(config: &Config, cmd: TokenCommand) -> anyhow::Result<()> {
    let domain = open_domain(config).await?;
    match cmd {
        TokenCommand::Create { email, name, days } => {
            let (_, secret) = domain.create_token(&email, name.as_deref(), days).await.map_err(|e| match e {
                DomainError::NotFound => no_user(&email),
                other => explain(other, "the token"),
            })?;
            println!("{}", *secret);
        }
        TokenCommand::List { email } => {
            let tokens = domain.list_tokens(&email).await.map_err(|e| match e {
                DomainError::NotFound => no_user(&email),
                other => explain(other, "the token"),
            })?;
            for t in tokens {
                let used = t.last_used_at.map_or_else(|| "never".to_owned(), |t| t.to_string());
                println!(
                    "{}\t{}\tcreated:{}\texpires:{}\tlast_used:{}",
                    t.id, t.name, t.inserted_at, t.expires_at, used
                );
            }
        }
        TokenCommand::Revoke { id } => {
            domain.revoke_token(id).await.map_err(|e| explain(e, &format!("a token with id {id}")))?;
            eprintln!("revoked {id}");
        }
    }
    Ok(())
}

pub(super) fn read_password() -> anyhow::Result<Zeroizing<String>> {
    let mut line = Zeroizing::new(String::new());
    std::io::stdin().lock().read_line(&mut line).context("reading the password from standard input")?;
    let password = Zeroizing::new(line.trim_end_matches(['\r', '\n']).to_owned());
    if password.is_empty() {
        bail!("--password-stdin: standard input held no password");
    }
    Ok(password)
}

fn role_of(role: RoleArg) -> Role {
    match role {
        RoleArg::Admin => Role::Admin,
        RoleArg::Unprivileged => Role::Unprivileged,
    }
}
