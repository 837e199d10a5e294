//! Firezone 0.7.26–0.7.36: its database schema, its encryption at rest, its files, and the
//! conversion of its rows into an [`ferrozone_domain::import::ImportBatch`].
//!
//! The order of an import: [`secrets`] gives the keys and variables, [`schema::check`]
//! accepts the database, [`read::read`] takes its rows, [`convert::convert`] builds the
//! batch and the [`report::Report`].

pub mod cloak;
pub mod convert;
pub mod networks;
pub mod read;
pub mod report;
pub mod schema;
pub mod secrets;
