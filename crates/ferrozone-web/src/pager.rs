//! The links under a paged list, the same on every page that has them
//! (`templates/pager.html`, included where the list ends).

/// Where a paged list goes from here: back to its first page from a later one, on to the
/// next page while the list may go on. Links keep the page's filter.
pub struct Pager {
    /// What a screen reader calls the links (`aria-label`).
    pub label: &'static str,
    /// The first page's link, on a later page.
    pub first: Option<String>,
    /// The next page's link, when this page is full.
    pub next: Option<String>,
}

impl Pager {
    /// The pager of a list of the admin console.
    pub fn pages(first: Option<String>, next: Option<String>) -> Self {
        Self { label: "Pages", first, next }
    }
}
