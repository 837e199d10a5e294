//! Entry points for the fuzz targets (`fuzz/` at the top of the repository), behind the
//! `fuzzing` feature, so that internals without a public API of their own are reached
//! without widening their visibility.

use crate::c14n::{canonicalize, Options};
use crate::xml::{is, parse, NS_DSIG};

/// Exclusive C14N of the `index`th element of `xml` (in document order, wrapping around),
/// leaving out its enveloped `Signature` child if it has one, as the verifier does; `None`
/// when the verifier's parser refuses `xml`.
pub fn c14n_element(xml: &str, index: usize, with_comments: bool, inclusive_prefixes: Vec<String>) -> Option<String> {
    let doc = parse(xml).ok()?;
    let elements: Vec<_> = doc.descendants().filter(|n| n.is_element()).collect();
    let apex = *elements.get(index % elements.len().max(1))?;
    let signature = apex.children().find(|n| is(*n, NS_DSIG, "Signature")).map(|n| n.id());
    Some(canonicalize(apex, signature, &Options { with_comments, inclusive_prefixes }))
}

/// Exclusive C14N of the document element of `xml`, which must parse.
pub fn c14n_root(xml: &str, with_comments: bool, inclusive_prefixes: Vec<String>) -> Result<String, String> {
    let doc = parse(xml)?;
    Ok(canonicalize(doc.root_element(), None, &Options { with_comments, inclusive_prefixes }))
}
