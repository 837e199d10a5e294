//! What a SAML sign-in's one-time flows remember, typed, and their stored form: a tag line
//! and then the fields, one a line, the last one taking the rest. Decoding refuses any
//! other shape, so a flow of one step (or another protocol's) is never taken for another.

use zeroize::Zeroizing;

const STARTED: &str = "saml-start";
const VERIFIED: &str = "saml-finish";
/// A verified flow that also remembers the groups the assertion named.
const VERIFIED_WITH_GROUPS: &str = "saml-finish-groups";

/// The state of a SAML sign-in, as its flow keeps it (sealed, with the flow).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlowState {
    /// Sent to the IdP: the AuthnRequest's id, which the response must answer.
    Started { request_id: String },
    /// The IdP's response verified: the first flow's state (what the browser's flow cookie
    /// must hold at the finish), the email the response vouched for, and the groups it
    /// named (`None`: the provider's groups are not read).
    Verified { started: String, email: String, groups: Option<Vec<String>> },
}

impl FlowState {
    /// The stored form.
    pub fn encode(&self) -> Zeroizing<Vec<u8>> {
        let text = match self {
            Self::Started { request_id } => format!("{STARTED}\n{request_id}"),
            Self::Verified { started, email, groups: None } => format!("{VERIFIED}\n{started}\n{email}"),
            Self::Verified { started, email, groups: Some(groups) } => {
                // JSON on one line: a name may hold anything but cannot break the line.
                let groups = serde_json::to_string(groups).unwrap_or_else(|_| "[]".to_owned());
                format!("{VERIFIED_WITH_GROUPS}\n{started}\n{groups}\n{email}")
            }
        };
        Zeroizing::new(text.into_bytes())
    }

    /// The state `bytes` encode; `None` for anything [`Self::encode`] does not make: another
    /// tag, a missing or empty field, a line break inside a field that cannot hold one.
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(bytes).ok()?;
        let (tag, rest) = text.split_once('\n')?;
        match tag {
            STARTED => Some(Self::Started { request_id: field(rest)?.to_owned() }),
            VERIFIED => {
                let (started, email) = rest.split_once('\n')?;
                let (started, email) = (field(started)?.to_owned(), nonempty(email)?.to_owned());
                Some(Self::Verified { started, email, groups: None })
            }
            VERIFIED_WITH_GROUPS => {
                let (started, rest) = rest.split_once('\n')?;
                let (groups, email) = rest.split_once('\n')?;
                let groups = serde_json::from_str(field(groups)?).ok()?;
                let (started, email) = (field(started)?.to_owned(), nonempty(email)?.to_owned());
                Some(Self::Verified { started, email, groups: Some(groups) })
            }
            _ => None,
        }
    }
}

/// A one-line field: not empty, no line break.
fn field(text: &str) -> Option<&str> {
    nonempty(text).filter(|t| !t.contains(['\n', '\r']))
}

fn nonempty(text: &str) -> Option<&str> {
    Some(text).filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started() -> FlowState {
        FlowState::Started { request_id: "_fz0123456789abcdef".into() }
    }

    fn verified() -> FlowState {
        FlowState::Verified { started: "c3RhdGU".into(), email: "kate@example.com".into(), groups: None }
    }

    fn with_groups() -> FlowState {
        let groups = Some(vec!["eng".to_owned(), "line\nbreak \"quoted\"".to_owned()]);
        FlowState::Verified { started: "c3RhdGU".into(), email: "kate@example.com".into(), groups }
    }

    #[test]
    fn decodes_what_it_encodes() {
        for state in [
            started(),
            verified(),
            with_groups(),
            FlowState::Verified { started: "s".into(), email: "e@example.com".into(), groups: Some(vec![]) },
        ] {
            assert_eq!(FlowState::decode(&state.encode()), Some(state));
        }
    }

    #[test]
    fn keeps_the_stored_form_of_flows_already_pending() {
        assert_eq!(&started().encode()[..], b"saml-start\n_fz0123456789abcdef");
        assert_eq!(&verified().encode()[..], b"saml-finish\nc3RhdGU\nkate@example.com");
    }

    #[test]
    fn refuses_malformed_input() {
        let bad: &[&[u8]] = &[
            b"",
            b"saml-start",
            b"saml-start\n",
            b"saml-start\n_fz1\n",
            b"saml-start\n_fz1\r",
            b"saml-finish\n",
            b"saml-finish\nstate",
            b"saml-finish\nstate\n",
            b"saml-finish\n\nkate@example.com",
            b"saml-finish\nsta\rte\nkate@example.com",
            b"saml-other\n_fz1",
            b"SAML-START\n_fz1",
            b" saml-start\n_fz1",
            b"{\"nonce\":\"n\",\"pkce_verifier\":\"v\"}",
            b"saml-start\n\xff\xfe",
            b"saml-finish-groups\nstate\nkate@example.com",
            b"saml-finish-groups\nstate\n{\"not\":\"a list\"}\nkate@example.com",
        ];
        for bytes in bad {
            assert_eq!(FlowState::decode(bytes), None, "{:?}", String::from_utf8_lossy(bytes));
        }
    }

    #[test]
    fn the_email_takes_the_rest() {
        let state = FlowState::decode(b"saml-finish\nstate\nkate@example.com\nmore").unwrap();
        assert_eq!(
            state,
            FlowState::Verified { started: "state".into(), email: "kate@example.com\nmore".into(), groups: None }
        );
    }
}
