use super::*;

fn refused(dump: &str) -> Refused {
    check(dump.as_bytes()).expect_err(dump)
}

fn accepted(dump: &str) -> String {
    String::from_utf8(check(dump.as_bytes()).unwrap_or_else(|e| panic!("{e}: {dump}"))).unwrap()
}

#[test]
fn what_pg_dump_writes_is_accepted_with_its_restrict_lines_blanked() {
    let dump = "--\n-- PostgreSQL database dump\n--\n\n\\restrict AbC123\n\
        SET standard_conforming_strings = on;\n\
        SELECT pg_catalog.set_config('search_path', '', false);\n\
        CREATE FUNCTION public.f() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;\n\
        CREATE FUNCTION public.g() RETURNS text LANGUAGE sql AS $_$ SELECT 'a\\b' $_$;\n\
        COMMENT ON TABLE public.users IS 'it''s';\n\
        COPY public.users (id, email, \"to\") FROM stdin;\n\
        1\t\\\\! not a command\t\\N\n\
        2\tx';\\connect other\t\\N\n\
        \\.\n\
        ALTER TABLE ONLY public.users ADD CONSTRAINT users_pkey PRIMARY KEY (id);\n\
        \\unrestrict AbC123\r\n";
    let out = accepted(dump);
    assert!(!out.contains("restrict"), "{out}");
    assert_eq!(out.lines().count(), dump.lines().count(), "line numbers stay the dump's");
    assert!(out.contains("2\tx';\\connect other"), "table data is kept as it is");
}

#[test]
fn meta_commands_are_refused_wherever_psql_would_run_them() {
    for (dump, line, command) in [
        ("\\! touch /tmp/x\n", 1, "\\!"),
        ("SELECT 1;\n\\connect other\n", 2, "\\connect"),
        ("SELECT 1; \\! id\n", 1, "\\!"),
        ("SELECT 1 \\g\n", 1, "\\g"),
        ("  \\restrict abc\n", 1, "\\restrict"),
        ("\\restrict abc; \\! id\n", 1, "\\restrict"),
        ("-- a comment\r\\! id\n", 1, "\\!"),
        ("/* a /* nested */ comment */ \\! id\n", 1, "\\!"),
        ("SELECT 'a''b' \\! id\n", 1, "\\!"),
        ("SELECT \"a\"\"b\" \\! id\n", 1, "\\!"),
        ("SELECT $x$ $y$ $x$ \\! id\n", 1, "\\!"),
        ("-- COPY t FROM stdin;\n\\! id\n\\.\n", 2, "\\!"),
        ("SELECT 'COPY t FROM stdin;'\n;\n\\! id\n", 3, "\\!"),
        ("COPY t FROM stdin;\n1\n\\.\n\\copy t to program 'id'\n", 4, "\\copy"),
    ] {
        let e = refused(dump);
        assert_eq!(e.line, line, "{dump:?}: {e}");
        assert!(e.reason.contains(&format!("`{command}`")), "{dump:?}: {e}");
    }
}

#[test]
fn copy_is_from_stdin_only() {
    for dump in [
        "COPY (SELECT 1) TO PROGRAM 'touch /tmp/x';\n",
        "COPY t FROM PROGRAM 'id';\n",
        "copy t from program 'id';\n",
        "COPY t FROM '/etc/passwd';\n",
        "COPY t FROM 'stdin';\n",
        "COPY t TO stdout;\n",
        "COPY (SELECT a FROM b) TO '/tmp/x';\n",
    ] {
        let e = refused(dump);
        assert!(e.reason.contains("COPY"), "{dump:?}: {e}");
    }
    let e = refused("COPY t FROM stdin; \\! id\n1\n\\.\n");
    assert!(e.reason.contains("text after COPY"), "{e}");
    // Data ends at `\.` alone on its line, as psql reads it; what follows is SQL again.
    let e = refused("COPY t FROM stdin;\n\\. \n\\.x\n\\.\n\\! id\n");
    assert_eq!(e.line, 5, "{e}");
}

#[test]
fn what_psql_could_read_another_way_is_refused() {
    for (dump, needle) in [
        ("SELECT 'a\\' \\! id '\n", "standard_conforming_strings"),
        ("SELECT 1$a$ x $a$ \\! id $a$;\n", "dollar quote"),
        ("SELECT a$$ x $$;\n", "dollar quote"),
        ("SELECT '\u{e9}';\n", "ASCII"),
        ("SELECT 1; -- \u{e9}\n", "ASCII"),
        ("SELECT 1 \0 ';\n\\! id '\n", "NUL"),
        ("CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; END;\n", "BEGIN ATOMIC"),
    ] {
        let e = refused(dump);
        assert!(e.reason.contains(needle), "{dump:?}: {e}");
    }
    // An E'' string always takes backslash escapes; table data may hold any byte.
    accepted("SELECT E'a\\'b';\nCOPY t FROM stdin;\n\u{e9}\0\n\\.\n");
    accepted("SELECT $1, a$b, x;\n");
}
