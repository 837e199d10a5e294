// Attack documents against the assertion consumer (issue 16, findings 1 and 2), built from a
// signed response. Included by the response tests and by `examples/attack_cpu.rs`.

/// The reference's exclusive C14N transform as the test IdP writes it.
const REFERENCE_C14N: &str = r#"<Transform Algorithm="http://www.w3.org/2001/10/xml-exc-c14n#"/></Transforms>"#;

/// `response` whose signed Assertion declares `declarations` namespaces and holds `children`
/// empty elements, its reference canonicalized with an `InclusiveNamespaces` list of
/// `prefixes` unknown prefixes: a canonicalization that looks every listed prefix up at every
/// element, through every declaration in scope, costs children × prefixes × declarations.
pub fn namespace_bomb(response: &str, declarations: usize, prefixes: usize, children: usize) -> String {
    let declared: String = (0..declarations).map(|i| format!(" xmlns:p{i}=\"u\"")).collect();
    let listed: Vec<String> = (0..prefixes).map(|i| format!("q{i}")).collect();
    let transform = format!(
        concat!(
            r#"<Transform Algorithm="http://www.w3.org/2001/10/xml-exc-c14n#">"#,
            r#"<ec:InclusiveNamespaces xmlns:ec="http://www.w3.org/2001/10/xml-exc-c14n#" PrefixList="{}"/>"#,
            r#"</Transform></Transforms>"#
        ),
        listed.join(" ")
    );
    let transform = if prefixes == 0 { REFERENCE_C14N.to_owned() } else { transform };
    assert!(response.contains(REFERENCE_C14N), "the response has the expected transform");
    response
        .replacen("<saml:Assertion ", &format!("<saml:Assertion{declared} "), 1)
        .replacen(REFERENCE_C14N, &transform, 1)
        .replacen("</saml:Assertion>", &format!("{}</saml:Assertion>", "<x/>".repeat(children)), 1)
}

/// `response` whose root element carries `count` more attributes: the parser checks each
/// against all the element's others.
pub fn attribute_bomb(response: &str, count: usize) -> String {
    let attributes: String = (0..count).map(|i| format!(" a{i}=\"\"")).collect();
    response.replacen("<samlp:Response ", &format!("<samlp:Response{attributes} "), 1)
}

/// `response` with an element of `count` attributes before its status, behind a comment
/// that opens with `<!-->` and holds a CDATA opener whose end the last attribute's value
/// holds: a scan that took `<!-->` for a whole comment would skip the element and count
/// none of its attributes.
pub fn hidden_attribute_bomb(response: &str, count: usize) -> String {
    let attributes: String = (0..count).map(|i| format!(" a{i}=\"\"")).collect();
    let hidden = format!("<!--> <![CDATA[ --><x{attributes} z=\"]]>\"/><samlp:Status>");
    response.replacen("<samlp:Status>", &hidden, 1)
}

/// `response` whose root element declares `count` more namespaces.
pub fn declaration_bomb(response: &str, count: usize) -> String {
    let declared: String = (0..count).map(|i| format!(" xmlns:n{i}=\"u\"")).collect();
    response.replacen("<samlp:Response ", &format!("<samlp:Response{declared} "), 1)
}
