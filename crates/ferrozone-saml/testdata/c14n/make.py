#!/usr/bin/env python3
"""Expected exclusive canonical forms for ferrozone-saml's C14N tests, made by libxml2
(through lxml), an implementation independent of Ferrozone's:

    python3 -m venv /tmp/lxml && /tmp/lxml/bin/pip install lxml && /tmp/lxml/bin/python make.py

Each case canonicalizes the first element with the given local name in NAME.xml and writes
NAME[-variant].c14n; crates/ferrozone-saml/src/c14n.rs lists the same cases.
"""
import os

from lxml import etree

HERE = os.path.dirname(os.path.abspath(__file__))

CASES = [
    # (output, input, element, with_comments, inclusive prefixes)
    ('azure', 'azure', 'Assertion', False, None),
    ('okta', 'okta', 'Assertion', False, ['xs']),
    ('okta-no-prefix-list', 'okta', 'Assertion', False, None),
    ('undeclare', 'undeclare', 'c', False, None),
    ('undeclare-root', 'undeclare', 'a', False, None),
    ('undeclare-default-listed', 'undeclare', 'c', False, ['#default', 'p']),
    ('text', 'text', 'e', False, None),
    ('text-with-comments', 'text', 'e', True, None),
    ('text-doc', 'text', 'doc', True, None),
    ('attrs', 'attrs', 'el', False, None),
]

for out, name, element, comments, prefixes in CASES:
    tree = etree.parse(os.path.join(HERE, name + '.xml'))
    node = next(e for e in tree.iter() if isinstance(e.tag, str) and etree.QName(e).localname == element)
    canonical = etree.tostring(node, method='c14n', exclusive=True, with_comments=comments,
                               inclusive_ns_prefixes=prefixes)
    with open(os.path.join(HERE, out + '.c14n'), 'wb') as f:
        f.write(canonical)
    print(out, canonical[:100])
