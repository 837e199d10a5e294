//! Small helpers over `roxmltree`: parsing with limits, namespaced children, strict text.

mod prescan;

use roxmltree::{Document, Node, ParsingOptions};

pub const NS_PROTOCOL: &str = "urn:oasis:names:tc:SAML:2.0:protocol";
pub const NS_ASSERTION: &str = "urn:oasis:names:tc:SAML:2.0:assertion";
pub const NS_METADATA: &str = "urn:oasis:names:tc:SAML:2.0:metadata";
pub const NS_DSIG: &str = "http://www.w3.org/2000/09/xmldsig#";
pub const NS_EXC_C14N: &str = "http://www.w3.org/2001/10/xml-exc-c14n#";

/// More nodes than any real SAML message or metadata has (big federation metadata aside,
/// which is not what a provider is configured with).
const NODES_LIMIT: u32 = 50_000;
/// Deeper than any SAML message; canonicalization recurses, so depth is bounded.
pub const DEPTH_LIMIT: usize = 64;

/// Parses `text`, refusing DTDs (so no entity expansion) and oversized documents. The
/// linear [`prescan`] runs first: the parser's own duplicate checks are quadratic in the
/// attributes and namespace declarations of one element.
pub fn parse(text: &str) -> Result<Document<'_>, String> {
    prescan::check(text)?;
    let options = ParsingOptions { allow_dtd: false, nodes_limit: NODES_LIMIT, ..ParsingOptions::default() };
    let doc = Document::parse_with_options(text, options).map_err(|e| format!("not well-formed XML: {e}"))?;
    refuse_reserved_pi_targets(&doc)?;
    Ok(doc)
}

/// XML reserves the processing-instruction target `xml` in any case (`PITarget`), but the
/// parser accepts one glued to its data (`<?xml(…?>`), whose canonical form (`<?xml (…?>`)
/// would then not parse: refused, so every canonical form is a document again.
fn refuse_reserved_pi_targets(doc: &Document<'_>) -> Result<(), String> {
    let reserved = doc.descendants().filter_map(|n| n.pi()).any(|pi| pi.target.eq_ignore_ascii_case("xml"));
    if reserved {
        return Err("not well-formed XML: a processing instruction is named xml".to_owned());
    }
    Ok(())
}

/// Whether `node` is the element `{ns}name`.
pub fn is(node: Node<'_, '_>, ns: &str, name: &str) -> bool {
    node.is_element() && node.tag_name().namespace() == Some(ns) && node.tag_name().name() == name
}

/// The element children `{ns}name` of `node`.
pub fn children<'a, 'i>(node: Node<'a, 'i>, ns: &'a str, name: &'a str) -> impl Iterator<Item = Node<'a, 'i>> + 'a {
    node.children().filter(move |c| is(*c, ns, name))
}

/// The one element child `{ns}name` of `node`: none or several is an error.
pub fn only_child<'a, 'i>(node: Node<'a, 'i>, ns: &'a str, name: &'a str) -> Result<Node<'a, 'i>, String> {
    let mut found = children(node, ns, name);
    match (found.next(), found.next()) {
        (Some(one), None) => Ok(one),
        (None, _) => Err(format!("{} has no {name}", node.tag_name().name())),
        (Some(_), Some(_)) => Err(format!("{} has more than one {name}", node.tag_name().name())),
    }
}

/// The element child `{ns}name` of `node`, if there is exactly one; several is an error.
pub fn optional_child<'a, 'i>(node: Node<'a, 'i>, ns: &'a str, name: &'a str) -> Result<Option<Node<'a, 'i>>, String> {
    let mut found = children(node, ns, name);
    match (found.next(), found.next()) {
        (one, None) => Ok(one),
        (Some(_), Some(_)) => Err(format!("{} has more than one {name}", node.tag_name().name())),
        (None, Some(_)) => unreachable!("an iterator yields nothing after its end"),
    }
}

/// The whole text content of `node`, which must hold only text: a comment, processing
/// instruction or element inside is refused. (Taking only the first text node would let a
/// comment inside a signed value change what is read without changing what was signed.)
pub fn text(node: Node<'_, '_>) -> Result<String, String> {
    let mut out = String::new();
    for child in node.children() {
        match child.text().filter(|_| child.is_text()) {
            Some(part) => out.push_str(part),
            None => return Err(format!("{} holds more than text", node.tag_name().name())),
        }
    }
    Ok(out)
}

/// The trimmed text of `node`, which must not be empty.
pub fn value(node: Node<'_, '_>) -> Result<String, String> {
    let text = text(node)?;
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(format!("{} is empty", node.tag_name().name()));
    }
    Ok(trimmed.to_owned())
}

/// Base64 with any XML whitespace (line breaks in certificates and signatures) removed.
pub fn base64(text: &str) -> Result<Vec<u8>, String> {
    use base64::Engine as _;
    let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    base64::engine::general_purpose::STANDARD.decode(compact).map_err(|_| "invalid base64".to_owned())
}

/// Escapes text for an XML attribute value or text node that Ferrozone writes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_dtds_and_reads_only_pure_text() {
        assert!(parse("<!DOCTYPE a [<!ENTITY x \"y\">]><a>&x;</a>").is_err());
        let doc = parse("<a><b>one<!-- c -->two</b><c>x&amp;y</c><d>  </d></a>").unwrap();
        let [b, c, d] = ["b", "c", "d"].map(|n| doc.descendants().find(|e| e.has_tag_name(n)).unwrap());
        assert!(text(b).is_err(), "a comment inside the value is refused");
        assert_eq!(text(c).unwrap(), "x&y");
        assert!(value(d).is_err());
        assert_eq!(base64("YW\n Jj").unwrap(), b"abc");
        assert_eq!(escape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&apos;");
    }

    #[test]
    fn refuses_a_processing_instruction_named_xml() {
        // Found by the saml_c14n fuzz target: the parser read `xml` as the target, and the
        // canonical form `<?xml (version="1.0"?>` then failed to parse.
        assert!(parse("<a>x<?xml(version=\"1.0\"?></a>").is_err());
        assert!(parse("<a><?XmL data?></a>").is_err());
        assert!(parse("<a><?xml-stylesheet href=\"s\"?><?foo(bar?></a>").is_ok());
    }

    #[test]
    fn refuses_deep_nesting() {
        let deep = format!("{}{}", "<a>".repeat(DEPTH_LIMIT + 2), "</a>".repeat(DEPTH_LIMIT + 2));
        assert!(parse(&deep).is_err());
    }
}
