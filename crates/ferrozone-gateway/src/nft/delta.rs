//! A change of the egress rules only, as element additions and deletions.

use std::cmp::Ordering;
use std::fmt::Write;

use serde_json::Value;

use super::json::{element_json, patch};
use super::render::TABLE;
use super::sets::{Element, SetElements, SetId};

/// What turns the sets holding one rule set into those holding another.
#[derive(Debug)]
pub(crate) struct Delta<'a>(Vec<SetChange<'a>>);

#[derive(Debug)]
struct SetChange<'a> {
    set: SetId,
    gone: Vec<&'a Element>,
    new: Vec<&'a Element>,
}

impl<'a> Delta<'a> {
    /// The elements of `from` that `to` has not, and those of `to` that `from` has not.
    pub(crate) fn between(from: &'a SetElements, to: &'a SetElements) -> Self {
        let changes = SetId::all()
            .map(|set| {
                let (gone, new) = difference(from.get(set), to.get(set));
                SetChange { set, gone, new }
            })
            .filter(|change| !change.gone.is_empty() || !change.new.is_empty())
            .collect();
        Self(changes)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The `nft -f` text: per set, one `delete element` line naming exactly the elements
    /// that were added and are gone, then one `add element` line for the new ones; all
    /// deletions come first, so an element may be replaced by an overlapping one. One file
    /// is one transaction.
    pub(crate) fn text(&self) -> String {
        let mut deletions = String::new();
        let mut additions = String::new();
        for change in &self.0 {
            write_line(&mut deletions, "delete", change.set, &change.gone);
            write_line(&mut additions, "add", change.set, &change.new);
        }
        deletions + &additions
    }

    /// Brings `reading` (taken before the delta was applied) to what reading the table now
    /// would return. False when it cannot (see [`patch`]).
    pub(crate) fn patch(&self, reading: &mut Value) -> bool {
        self.0.iter().all(|change| {
            let gone: Vec<Value> = change.gone.iter().copied().map(element_json).collect();
            let new: Vec<Value> = change.new.iter().copied().map(element_json).collect();
            patch(reading, &change.set.name(), &gone, &new)
        })
    }
}

fn write_line(out: &mut String, verb: &str, set: SetId, elements: &[&Element]) {
    if elements.is_empty() {
        return;
    }
    let _ = write!(out, "{verb} element {TABLE} {} {{ ", set.name());
    for (i, element) in elements.iter().enumerate() {
        let separator = if i == 0 { "" } else { ", " };
        let _ = write!(out, "{separator}{element}");
    }
    out.push_str(" }\n");
}

/// The elements only in `old` and those only in `new`, both sorted (a merge of the two).
fn difference<'a>(old: &'a [Element], new: &'a [Element]) -> (Vec<&'a Element>, Vec<&'a Element>) {
    let (mut gone, mut added) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < old.len() && j < new.len() {
        match old[i].cmp(&new[j]) {
            Ordering::Less => {
                gone.push(&old[i]);
                i += 1;
            }
            Ordering::Greater => {
                added.push(&new[j]);
                j += 1;
            }
            Ordering::Equal => {
                i += 1;
                j += 1;
            }
        }
    }
    gone.extend(&old[i..]);
    added.extend(&new[j..]);
    (gone, added)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nft::render::{Egress, EgressRule, IfName, PortMatch, Protocol, Scope, Verdict};

    fn sets(rules: &[(&str, Verdict, Option<u16>)]) -> SetElements {
        let user = Scope::Sources(vec!["10.3.2.2".parse().unwrap(), "fd00::2".parse().unwrap()]);
        let rules = rules
            .iter()
            .map(|(destination, verdict, port)| EgressRule {
                scope: user.clone(),
                destination: destination.parse().unwrap(),
                verdict: *verdict,
                ports: port.map(|port| PortMatch { protocol: Protocol::Udp, first: port, last: port }),
            })
            .collect();
        SetElements::of(&Egress { wireguard: IfName::parse("wg0").unwrap(), rules, default: Verdict::Accept })
    }

    #[test]
    fn equal_sets_need_no_delta() {
        let a = sets(&[("1.1.1.0/24", Verdict::Drop, None)]);
        let b = a.clone();
        assert!(Delta::between(&a, &b).is_empty());
    }

    #[test]
    fn deletions_name_the_added_elements_and_come_first() {
        let from = sets(&[("1.1.1.1/24", Verdict::Drop, None), ("2001:db8::/64", Verdict::Accept, Some(53))]);
        let to = sets(&[
            ("1.1.0.0/16", Verdict::Drop, None),
            ("2001:db8::/64", Verdict::Accept, Some(53)),
            ("8.8.8.8/32", Verdict::Drop, None),
        ]);
        assert_eq!(
            Delta::between(&from, &to).text(),
            "delete element inet ferrozone user_ip_drop { 10.3.2.2 . 1.1.1.0/24 }\n\
             add element inet ferrozone user_ip_drop { 10.3.2.2 . 1.1.0.0/16, 10.3.2.2 . 8.8.8.8 }\n"
        );
        assert_eq!(
            Delta::between(&to, &from).text(),
            "delete element inet ferrozone user_ip_drop { 10.3.2.2 . 1.1.0.0/16, 10.3.2.2 . 8.8.8.8 }\n\
             add element inet ferrozone user_ip_drop { 10.3.2.2 . 1.1.1.0/24 }\n"
        );
    }
}
