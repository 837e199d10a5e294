//! Set elements as `nft -j` lists them, so that a reading of the table can be brought up to
//! date after a delta without listing 10,000s of elements again.

use serde_json::{json, Value};

use super::sets::Element;

/// `element` as `nft -j list table` shows it: an address as a string, a network as
/// `{"prefix": …}`, a protocol by name, a port as a number or `{"range": [lo, hi]}`, and
/// several of these as `{"concat": […]}`.
pub(crate) fn element_json(element: &Element) -> Value {
    let mut parts = Vec::with_capacity(4);
    if let Some(source) = element.source {
        parts.push(Value::String(source.to_string()));
    }
    let destination = element.destination;
    parts.push(if destination.prefix_len() == destination.max_prefix_len() {
        Value::String(destination.addr().to_string())
    } else {
        json!({"prefix": {"addr": destination.network().to_string(), "len": destination.prefix_len()}})
    });
    if let Some(protocol) = element.protocol_name() {
        parts.push(Value::String(protocol.to_owned()));
        parts.push(if element.first == element.last {
            json!(element.first)
        } else {
            json!({"range": [element.first, element.last]})
        });
    }
    if parts.len() == 1 {
        parts.remove(0)
    } else {
        json!({"concat": parts})
    }
}

/// Removes `gone` from and adds `new` to the elements of set `name` in `reading` (the
/// `nftables` array as [`Nft::read`](super::Nft::read) returns it, each set's elements
/// sorted by their text). False when the set or an element to remove is not there: the
/// reading cannot be patched and must be taken again.
pub(crate) fn patch(reading: &mut Value, name: &str, gone: &[Value], new: &[Value]) -> bool {
    let Some(set) = reading
        .as_array_mut()
        .into_iter()
        .flatten()
        .filter_map(|item| item.get_mut("set"))
        .find(|set| set.get("name").and_then(Value::as_str) == Some(name))
    else {
        return false;
    };
    let Some(set) = set.as_object_mut() else { return false };
    let Value::Array(elements) = set.entry("elem").or_insert_with(|| Value::Array(Vec::new())) else {
        return false;
    };
    for element in gone {
        match find(elements, element) {
            Ok(at) => {
                elements.remove(at);
            }
            Err(_) => return false,
        }
    }
    for element in new {
        match find(elements, element) {
            Ok(_) => return false,
            Err(at) => elements.insert(at, element.clone()),
        }
    }
    if elements.is_empty() {
        set.remove("elem");
    }
    true
}

/// Bisects `elements` (sorted by their JSON text) for `element`.
fn find(elements: &[Value], element: &Value) -> Result<usize, usize> {
    let key = element.to_string();
    elements.binary_search_by(|probe| probe.to_string().cmp(&key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_read_as_nft_lists_them() {
        use crate::nft::render::{Egress, EgressRule, IfName, PortMatch, Protocol, Scope, Verdict};
        use crate::nft::sets::{SetElements, SetId};
        let rule = |scope: Scope, destination: &str, ports: Option<(u16, u16)>| EgressRule {
            scope,
            destination: destination.parse().unwrap(),
            verdict: Verdict::Drop,
            ports: ports.map(|(first, last)| PortMatch { protocol: Protocol::Tcp, first, last }),
        };
        let user = Scope::Sources(vec!["10.0.0.1".parse().unwrap()]);
        let rules = vec![
            rule(user.clone(), "1.1.1.7/32", Some((443, 443))),
            rule(user, "1.1.1.1/24", Some((80, 90))),
            rule(Scope::Everyone, "::/0", None),
            rule(Scope::Everyone, "2001:db8::1/128", Some((1, 65535))),
        ];
        let sets = SetElements::of(&Egress { wireguard: IfName::parse("wg0").unwrap(), rules, default: Verdict::Drop });
        let listed: Vec<Value> =
            SetId::all().flat_map(|set| sets.get(set).iter().map(element_json).collect::<Vec<_>>()).collect();
        assert_eq!(
            listed,
            [
                json!({"concat": ["10.0.0.1", {"prefix": {"addr": "1.1.1.0", "len": 24}}, "tcp", {"range": [80, 90]}]}),
                json!({"concat": ["10.0.0.1", "1.1.1.7", "tcp", 443]}),
                json!({"concat": ["2001:db8::1", "tcp", {"range": [1, 65535]}]}),
                json!({"prefix": {"addr": "::", "len": 0}}),
            ]
        );
    }

    #[test]
    fn a_patch_keeps_the_elements_sorted_and_drops_an_emptied_list() {
        let mut reading =
            json!([{"set": {"name": "ip_drop", "elem": ["1.1.1.1", "3.3.3.3"]}}, {"set": {"name": "ip_accept"}}]);
        assert!(patch(&mut reading, "ip_drop", &[json!("1.1.1.1")], &[json!("2.2.2.2"), json!("0.0.0.0")]));
        assert!(patch(&mut reading, "ip_accept", &[], &[json!("9.9.9.9")]));
        assert_eq!(
            reading,
            json!([
                {"set": {"name": "ip_drop", "elem": ["0.0.0.0", "2.2.2.2", "3.3.3.3"]}},
                {"set": {"name": "ip_accept", "elem": ["9.9.9.9"]}},
            ])
        );
        assert!(patch(&mut reading, "ip_accept", &[json!("9.9.9.9")], &[]));
        assert_eq!(reading[1], json!({"set": {"name": "ip_accept"}}));
        assert!(!patch(&mut reading, "ip_accept", &[json!("9.9.9.9")], &[]), "not there");
        assert!(!patch(&mut reading, "no_such_set", &[], &[json!("9.9.9.9")]));
    }
}
