//! Imports from other VPN installations into Ferrozone. Each source's schema, encryption
//! and file formats stay in this crate, so the server's crates know only the
//! [`ferrozone_domain::import::ImportBatch`] it produces.

pub mod dump;
pub mod firezone;
pub mod scratch;
