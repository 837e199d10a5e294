//! `ferrozone user set-password | set-role | delete`: the API's user update and delete,
//! as an admin, with the same rules (password rules, the last admin stays).

use ferrozone_domain::input::{Patch, UserChanges};
use ferrozone_domain::store::DeviceQuery;
use ferrozone_domain::{Domain, Principal, Role};
use zeroize::Zeroizing;

use super::explain::{explain, user_by_email};

/// Sets the password; like a password change through the API, this ends the user's
/// browser sessions (its API tokens keep working).
pub async fn set_password(domain: &Domain, email: &str, password: Zeroizing<String>) -> anyhow::Result<()> {
    let user = user_by_email(domain, email).await?;
    let changes = UserChanges {
        password_confirmation: Some(password.clone()),
        password: Some(password),
        ..UserChanges::default()
    };
    domain
        .update_user(&Principal::operator(), &user.id.to_string(), &changes)
        .await
        .map_err(|e| explain(e, "the user"))?;
    eprintln!("set the password of {} ({}); its browser sessions ended", user.email, user.id);
    Ok(())
}

/// Sets the role; demoting the last admin is refused.
pub async fn set_role(domain: &Domain, email: &str, role: Role) -> anyhow::Result<()> {
    let user = user_by_email(domain, email).await?;
    let who = format!("{} ({})", user.email, user.id);
    if user.role == role {
        eprintln!("{who} already is {}; nothing changed", role.as_str());
        return Ok(());
    }
    let changes = UserChanges { role: Patch::Value(role), ..UserChanges::default() };
    domain
        .update_user(&Principal::operator(), &user.id.to_string(), &changes)
        .await
        .map_err(|e| explain(e, "the user"))?;
    eprintln!("{who} is now {}", role.as_str());
    Ok(())
}

/// Deletes the user with its devices and tokens, when `confirmed`; otherwise says what
/// would go and fails, so that a script without `--yes` deletes nothing.
pub async fn delete(domain: &Domain, email: &str, confirmed: bool) -> anyhow::Result<()> {
    let user = user_by_email(domain, email).await?;
    let who = format!("{} ({})", user.email, user.id);
    let operator = Principal::operator();
    let query = DeviceQuery { user_id: Some(user.id), ..DeviceQuery::default() };
    let devices = domain.list_devices(&operator, query).await.map_err(|e| explain(e, "the user"))?.len();
    if !confirmed {
        anyhow::bail!("not deleted: this would delete {who} with its {devices} device(s) and API tokens; add --yes");
    }
    domain.delete_user(&operator, &user.id.to_string()).await.map_err(|e| explain(e, "the user"))?;
    eprintln!("deleted {who} with its {devices} device(s) and API tokens");
    Ok(())
}
