//! A linear pre-scan of an XML text, before `roxmltree` parses it: the parser checks an
//! element's attributes and namespace declarations for duplicates pairwise, and copies the
//! namespaces in scope into every element that declares one, so one element with tens of
//! thousands of attributes or declarations costs seconds. The pre-scan counts elements,
//! attributes and namespace declarations per element, declarations in scope and in the whole
//! document, and depth, in one pass, and refuses a text over any limit. It is no XML parser:
//! it only finds where tags, comments, CDATA sections and processing instructions begin and
//! end (what it misreads, the parser then refuses).

use super::DEPTH_LIMIT;

/// Elements in one document: a response with a thousand group values has about 1,100.
pub const MAX_ELEMENTS: usize = 10_000;
/// Attributes (namespace declarations included) of one element: SAML's have fewer than 15.
pub const MAX_ATTRIBUTES_PER_ELEMENT: usize = 64;
/// Namespace declarations on one element: IdPs put at most about ten on the root.
pub const MAX_NAMESPACES_PER_ELEMENT: usize = 32;
/// Namespace declarations in scope at an element (its own and its ancestors'): what
/// canonicalization searches for every element and every prefix it looks up.
pub const MAX_NAMESPACES_IN_SCOPE: usize = 64;
/// Namespace declarations in one document (some IdPs declare `xs`/`xsi` on every value).
pub const MAX_NAMESPACES_PER_DOCUMENT: usize = 4_096;

/// `Ok` when `text` is within every limit; else what is over.
pub fn check(text: &str) -> Result<(), String> {
    let mut scan = Scan { text, at: 0, elements: 0, declared: 0, in_scope: 0, open: Vec::new() };
    while let Some(offset) = text[scan.at..].find('<') {
        scan.at += offset;
        scan.markup()?;
    }
    Ok(())
}

struct Scan<'a> {
    text: &'a str,
    /// The byte offset reached.
    at: usize,
    elements: usize,
    declared: usize,
    in_scope: usize,
    /// The namespace declarations of each open element.
    open: Vec<usize>,
}

fn malformed(what: &str) -> String {
    format!("not well-formed XML: {what}")
}

impl<'a> Scan<'a> {
    fn rest(&self) -> &[u8] {
        &self.text.as_bytes()[self.at..]
    }

    fn peek(&self) -> Option<u8> {
        self.rest().first().copied()
    }

    /// The markup at `<`.
    fn markup(&mut self) -> Result<(), String> {
        let rest = self.rest();
        if rest.starts_with(b"<!--") {
            self.skip_section("<!--", "-->")
        } else if rest.starts_with(b"<![CDATA[") {
            self.skip_section("<![CDATA[", "]]>")
        } else if rest.starts_with(b"<?") {
            self.skip_section("<?", "?>")
        } else if rest.starts_with(b"<!") {
            Err("DTDs are not accepted".into())
        } else if rest.starts_with(b"</") {
            let declarations = self.open.pop().ok_or_else(|| malformed("an end tag without a start tag"))?;
            self.in_scope -= declarations;
            self.skip_past(">")
        } else {
            self.start_tag()
        }
    }

    /// Moves past a comment, CDATA section or processing instruction: its `end` is searched
    /// after its `open`, as the parser does (`<!-->` opens a comment, it does not end one).
    fn skip_section(&mut self, open: &str, end: &str) -> Result<(), String> {
        self.at += open.len();
        self.skip_past(end)
    }

    fn skip_past(&mut self, end: &str) -> Result<(), String> {
        let rest = &self.text[self.at..];
        // A one-character end is searched as a byte (memchr), not as a substring.
        let found = match end.as_bytes() {
            [byte] => rest.bytes().position(|b| b == *byte),
            _ => rest.find(end),
        };
        self.at += found.ok_or_else(|| malformed(&format!("no closing `{end}`")))? + end.len();
        Ok(())
    }

    fn skip_whitespace(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    /// Moves past a name, up to whitespace or one of `stops`; the name.
    fn name(&mut self, stops: &[u8]) -> &'a str {
        let start = self.at;
        while self.peek().is_some_and(|b| !b.is_ascii_whitespace() && !stops.contains(&b)) {
            self.at += 1;
        }
        // Every stop is ASCII, so `at` is on a character boundary.
        &self.text[start..self.at]
    }

    fn start_tag(&mut self) -> Result<(), String> {
        self.elements += 1;
        if self.elements > MAX_ELEMENTS {
            return Err(format!("the XML has more than {MAX_ELEMENTS} elements"));
        }
        if self.open.len() >= DEPTH_LIMIT {
            return Err("XML nested too deeply".into());
        }
        self.at += 1;
        self.name(b"/>");
        let (mut attributes, mut declarations) = (0, 0);
        loop {
            self.skip_whitespace();
            match self.peek() {
                Some(b'>') => {
                    self.at += 1;
                    self.open.push(declarations);
                    return Ok(());
                }
                Some(b'/') => {
                    self.in_scope -= declarations;
                    return self.skip_past(">");
                }
                Some(_) => {}
                None => return Err(malformed("an unclosed start tag")),
            }
            attributes += 1;
            if attributes > MAX_ATTRIBUTES_PER_ELEMENT {
                return Err(format!("an XML element has more than {MAX_ATTRIBUTES_PER_ELEMENT} attributes"));
            }
            if self.attribute()? {
                declarations += 1;
                self.declaration(declarations)?;
            }
        }
    }

    /// Moves past one attribute; whether it declares a namespace.
    fn attribute(&mut self) -> Result<bool, String> {
        let name = self.name(b"=/>");
        if name.is_empty() {
            return Err(malformed("an attribute without a name"));
        }
        let declares = name == "xmlns" || name.starts_with("xmlns:");
        self.skip_whitespace();
        if self.peek() != Some(b'=') {
            return Err(malformed("an attribute without a value"));
        }
        self.at += 1;
        self.skip_whitespace();
        let quote = match self.peek() {
            Some(b'"') => "\"",
            Some(b'\'') => "'",
            _ => return Err(malformed("an unquoted attribute value")),
        };
        self.at += 1;
        self.skip_past(quote)?;
        Ok(declares)
    }

    /// Counts one more namespace declaration, the element's `on_element`th.
    fn declaration(&mut self, on_element: usize) -> Result<(), String> {
        self.declared += 1;
        self.in_scope += 1;
        if on_element > MAX_NAMESPACES_PER_ELEMENT {
            return Err(format!("an XML element declares more than {MAX_NAMESPACES_PER_ELEMENT} namespaces"));
        }
        if self.in_scope > MAX_NAMESPACES_IN_SCOPE {
            return Err(format!("more than {MAX_NAMESPACES_IN_SCOPE} XML namespace declarations are in scope"));
        }
        if self.declared > MAX_NAMESPACES_PER_DOCUMENT {
            return Err(format!("the XML declares more than {MAX_NAMESPACES_PER_DOCUMENT} namespaces"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn element(attributes: &str) -> String {
        format!("<r {attributes}/>")
    }

    fn numbered(count: usize, each: impl Fn(usize) -> String) -> String {
        (0..count).map(each).collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn passes_what_it_does_not_count() {
        let xml = concat!(
            "<?xml version=\"1.0\"?>\n<a:r xmlns:a=\"urn:a\" x = '>' y=\"a'b\"><!-- <b> <c -->",
            "<![CDATA[ <d> </e> ]]><?pi <f>?><g/>t&amp;<h\tz=\"1\"\n/></a:r>"
        );
        assert_eq!(check(xml), Ok(()));
        assert_eq!(check("text only"), Ok(()));
    }

    #[test]
    fn refuses_what_is_over_a_limit() {
        let refusal = |xml: &str| check(xml).unwrap_err();
        let attributes = element(&numbered(MAX_ATTRIBUTES_PER_ELEMENT + 1, |i| format!("a{i}=\"\"")));
        assert!(refusal(&attributes).contains("attributes"));
        let declarations = element(&numbered(MAX_NAMESPACES_PER_ELEMENT + 1, |i| format!("xmlns:p{i}=\"u\"")));
        assert!(refusal(&declarations).contains("declares more than"));
        let half = MAX_NAMESPACES_PER_ELEMENT;
        let nested = format!(
            "<a {}><b {}><c xmlns=\"u\"/></b></a>",
            numbered(half, |i| format!("xmlns:a{i}=\"u\"")),
            numbered(half, |i| format!("xmlns:b{i}=\"u\"")),
        );
        assert!(refusal(&nested).contains("in scope"));
        // Siblings' declarations go out of scope with them; the document's total still counts.
        let sibling = format!("<s {}/>", numbered(8, |i| format!("xmlns:p{i}=\"u\"")));
        let siblings = |count: usize| format!("<r>{}</r>", sibling.repeat(count));
        assert_eq!(check(&siblings(MAX_NAMESPACES_PER_DOCUMENT / 8)), Ok(()));
        assert!(refusal(&siblings(MAX_NAMESPACES_PER_DOCUMENT / 8 + 1)).contains("declares more than 4096"));
        assert!(refusal(&format!("<r>{}</r>", "<e/>".repeat(MAX_ELEMENTS))).contains("elements"));
        assert_eq!(check(&format!("<r>{}</r>", "<e/>".repeat(MAX_ELEMENTS - 1))), Ok(()));
        assert!(refusal("<!DOCTYPE r><r/>").contains("DTD"));
    }

    #[test]
    fn a_section_ends_after_its_opener() {
        // `<!-->` opens a comment whose text begins with `>`. Read as a whole comment, the
        // CDATA opener inside would hide the element after the real comment, up to the `]]>`
        // in its last attribute, from every count.
        let hidden = numbered(MAX_ATTRIBUTES_PER_ELEMENT + 1, |i| format!("a{i}=\"\""));
        let xml = format!("<r><!--> <![CDATA[ --><e {hidden} z=\"]]>\"/></r>");
        assert!(check(&xml).unwrap_err().contains("attributes"), "{xml}");
        assert_eq!(check("<r><!-->--></r><?pi?>"), Ok(()));
        assert!(check("<r><?>").unwrap_err().contains("no closing `?>`"));
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        for broken in ["<r", "<r a>", "<r a=b>", "<r a=\"b>", "<!-- x", "</r>", "<r =\"x\"/>"] {
            assert!(check(broken).unwrap_err().contains("well-formed"), "{broken}");
        }
    }
}
