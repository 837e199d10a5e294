//! Exclusive C14N (the part of the SAML verifier that ran before any signature check) of
//! any element of any document the verifier's parser accepts.
//!
//! Input: one byte of options (bit 0: with comments; the rest: which element, in document
//! order), then either the XML, or an `InclusiveNamespaces` prefix list, a NUL and the XML.
//! Besides crashes and hangs, it checks that canonical forms are fixed points: the
//! canonical form of a canonical form is itself (a difference means a namespace declared
//! twice or dropped, or a character escaped wrongly).
#![no_main]

use ferrozone_saml::fuzzing::{c14n_element, c14n_root};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&options, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let (prefixes, xml) = text.split_once('\0').unwrap_or(("", text));
    let prefixes: Vec<String> = prefixes.split_ascii_whitespace().map(str::to_owned).collect();
    let with_comments = options & 1 == 1;
    let Some(canonical) = c14n_element(xml, usize::from(options >> 1), with_comments, prefixes.clone()) else {
        return;
    };
    match c14n_root(&canonical, with_comments, prefixes) {
        Ok(again) => assert_eq!(again, canonical, "the canonical form is not a fixed point"),
        Err(e) => panic!("the canonical form does not parse: {e}\n{canonical}"),
    }
});
