//! Groups from an identity provider (docs/design/groups.md, "Groups from the identity
//! providers"): where a provider's groups are read (an OpenID Connect claim, a SAML
//! attribute), which of them Ferrozone keeps, and the memberships a sign-in leaves.

use std::collections::HashSet;

use crate::group::{name_key, MAX_NAME_LEN};

/// The most groups one sign-in applies: a directory that sends more (after the filter) is
/// cut there, with a warning, rather than flooding Ferrozone.
pub const MAX_GROUPS_PER_SIGN_IN: usize = 500;

/// How a provider's groups are read and filtered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupClaims {
    /// The OpenID Connect claim or SAML attribute holding the group names; `None`: the
    /// provider's groups are not read, and memberships are never changed by its sign-ins.
    pub claim: Option<String>,
    /// Only names starting with this (compared as they are sent).
    pub prefix: Option<String>,
    /// Only these names (compared whatever their case); empty: any name.
    pub allowed: Vec<String>,
}

impl GroupClaims {
    /// Reads `claim`, keeping every group.
    pub fn reading(claim: &str) -> Self {
        Self { claim: Some(claim.to_owned()), prefix: None, allowed: Vec::new() }
    }

    /// The names of `sent` that Ferrozone keeps, in the order sent: trimmed, not blank, at
    /// most [`MAX_NAME_LEN`] characters, passing the prefix and the list, each once
    /// whatever its case, at most [`MAX_GROUPS_PER_SIGN_IN`].
    pub fn keep<'a>(&self, sent: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        let allowed: HashSet<String> = self.allowed.iter().map(|name| name_key(name.trim())).collect();
        let mut seen = HashSet::new();
        let mut kept = Vec::new();
        for name in sent.into_iter().map(str::trim) {
            let fits = !name.is_empty() && name.chars().count() <= MAX_NAME_LEN;
            let prefixed = self.prefix.as_deref().is_none_or(|prefix| name.starts_with(prefix));
            let listed = allowed.is_empty() || allowed.contains(&name_key(name));
            if fits && prefixed && listed && seen.insert(name_key(name)) {
                kept.push(name.to_owned());
            }
        }
        if kept.len() > MAX_GROUPS_PER_SIGN_IN {
            tracing::warn!(
                kept = kept.len(),
                limit = MAX_GROUPS_PER_SIGN_IN,
                "an identity provider sent more groups than one sign-in applies; set groups_prefix or groups_allowed"
            );
            kept.truncate(MAX_GROUPS_PER_SIGN_IN);
        }
        kept
    }
}

/// What applying a provider's groups to a user changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupSync {
    /// Groups the provider named that did not exist, made with the provider as their source.
    pub created: usize,
    /// Memberships the provider added.
    pub added: usize,
    /// Memberships of the provider's that it no longer names.
    pub removed: usize,
}

impl GroupSync {
    pub fn changed(&self) -> bool {
        self.added > 0 || self.removed > 0
    }
}

/// The source of groups and memberships from provider `id`: `idp:<id>`.
pub fn source_of(provider_id: &str) -> String {
    format!("idp:{provider_id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_trimmed_deduplicated_and_filtered_by_prefix_and_list() {
        let all = GroupClaims::reading("groups");
        assert_eq!(all.keep([" Eng ", "eng", "", "Ops", "ENG"]), ["Eng", "Ops"], "once whatever the case");
        let prefixed = GroupClaims { prefix: Some("vpn-".into()), ..GroupClaims::reading("groups") };
        assert_eq!(prefixed.keep(["vpn-eng", "eng", "VPN-ops", "vpn-ops"]), ["vpn-eng", "vpn-ops"]);
        let listed = GroupClaims { allowed: vec!["Staff".into(), " ops".into()], ..GroupClaims::reading("groups") };
        assert_eq!(listed.keep(["staff", "Ops", "Finance"]), ["staff", "Ops"]);
        let long = "x".repeat(MAX_NAME_LEN + 1);
        assert!(all.keep([long.as_str()]).is_empty(), "too long for a group's name");
        let many: Vec<String> = (0..MAX_GROUPS_PER_SIGN_IN + 10).map(|n| format!("g{n}")).collect();
        assert_eq!(all.keep(many.iter().map(String::as_str)).len(), MAX_GROUPS_PER_SIGN_IN);
    }
}
