//! Rebuilds the crate when a migration is added or edited: `sqlx::migrate!` and
//! `include_str!` embed the files, but cargo would not notice a new one by itself.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
