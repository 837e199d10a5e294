//! Ferrozone's own nftables table, `inet ferrozone`: forwarding filter and NAT.
//!
//! The desired table is rendered by a pure function ([`render()`]) into one complete
//! ruleset text, which [`Nft::apply`] hands to `nft -f -`: a file is one transaction, and
//! the text declares the table, deletes it and defines it again, so the table is replaced
//! atomically and nothing outside it is touched. [`Nft::read`] lists the table back as JSON
//! (without handles) so a reconciler can see it changed behind its back.
//!
//! Why the `nft` program rather than a netlink crate: the maintained Rust crates either
//! wrap libnftables through C (`nftables` builds its JSON and still runs `nft`; `rustables`
//! links libnftnl) or speak raw nf_tables netlink, where sets, interval elements and
//! concatenations must be encoded by hand. `nft -f` gives a complete ruleset per apply,
//! atomic by construction, readable in logs and testable as golden text, at the cost of
//! one process per apply (milliseconds, and applies are rare).

mod apply;
mod delta;
mod json;
mod keep;
mod render;
mod sets;

pub use apply::{Nft, TableState};
pub use keep::{Keeper, Pass};
pub use render::{
    render, Egress, EgressRule, IfName, InvalidIfName, PortMatch, Protocol, Scope, Table, Verdict, TABLE,
};
