//! One ACME exchange: load or create the account, order a certificate for the host,
//! answer its TLS-ALPN-01 challenge, finalize and download the chain.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use instant_acme::{
    Account, AccountBuilder, AuthorizationStatus, ChallengeType, Identifier, NewAccount, NewOrder, OrderStatus,
    RetryPolicy,
};

use crate::cache::{Cache, StoredAccount};
use crate::certificate::challenge_certificate;
use crate::resolver::Certificates;
use crate::Settings;

/// How long the CA may take to validate the challenge, and then to issue.
const POLICY: RetryPolicy =
    RetryPolicy::new().initial_delay(Duration::from_millis(250)).timeout(Duration::from_secs(120));

/// Orders a certificate for the host; returns its chain followed by its private key, as PEM.
pub(crate) async fn order(
    settings: &Settings,
    cache: &Cache,
    certificates: &Arc<Certificates>,
) -> anyhow::Result<String> {
    let account = account(settings, cache).await?;
    let identifiers = [Identifier::Dns(settings.host.clone())];
    let mut order = account.new_order(&NewOrder::new(&identifiers)).await.context("creating the order")?;
    tracing::info!(host = %settings.host, order = order.url(), "ACME order created");

    // Held until the order is decided: the CA may validate at any point before that.
    let mut answering = Vec::new();
    let mut authorizations = order.authorizations();
    while let Some(authorization) = authorizations.next().await {
        let mut authorization = authorization.context("fetching the authorization")?;
        match authorization.status {
            AuthorizationStatus::Valid => continue,
            AuthorizationStatus::Pending => {}
            other => bail!("the authorization is {other:?}"),
        }
        let mut challenge = authorization
            .challenge(ChallengeType::TlsAlpn01)
            .context("the CA offers no tls-alpn-01 challenge for this host")?;
        let host = challenge.identifier().to_string();
        let certificate = challenge_certificate(&host, challenge.key_authorization().digest().as_ref())
            .context("making the challenge certificate")?;
        answering.push(certificates.answer_challenge(&host, certificate));
        challenge.set_ready().await.context("announcing the challenge")?;
        tracing::info!(%host, "answering the tls-alpn-01 challenge");
    }

    let status = order.poll_ready(&POLICY).await.context("waiting for the validation")?;
    drop(answering);
    if status != OrderStatus::Ready {
        bail!("the order is {status:?}: the CA could not validate the challenge on port 443");
    }
    let key_pem = order.finalize().await.context("finalizing the order")?;
    let chain_pem = order.poll_certificate(&POLICY).await.context("downloading the certificate")?;
    Ok(format!("{}\n{key_pem}", chain_pem.trim_end()))
}

/// The stored account when it belongs to this directory; otherwise a new one, stored.
async fn account(settings: &Settings, cache: &Cache) -> anyhow::Result<Account> {
    if let Some(stored) = cache.load_account()? {
        if stored.directory_url == settings.directory_url {
            return builder(settings)?.from_credentials(stored.credentials).await.context("loading the ACME account");
        }
        tracing::info!(directory = %settings.directory_url, "the stored ACME account belongs to another directory; creating a new one");
    }
    let contact = settings.contact_email.as_ref().map(|email| format!("mailto:{email}"));
    let contacts: Vec<&str> = contact.iter().map(String::as_str).collect();
    let new_account = NewAccount { contact: &contacts, terms_of_service_agreed: true, only_return_existing: false };
    let (account, credentials) = builder(settings)?
        .create(&new_account, settings.directory_url.clone(), None)
        .await
        .context("creating the ACME account")?;
    cache.store_account(&StoredAccount { directory_url: settings.directory_url.clone(), credentials })?;
    tracing::info!(directory = %settings.directory_url, account = account.id(), "ACME account created");
    Ok(account)
}

fn builder(settings: &Settings) -> anyhow::Result<AccountBuilder> {
    Ok(match &settings.ca_file {
        Some(path) => {
            Account::builder_with_root(path).with_context(|| format!("reading the ACME CA file {}", path.display()))?
        }
        None => Account::builder().context("loading the system's root certificates")?,
    })
}
