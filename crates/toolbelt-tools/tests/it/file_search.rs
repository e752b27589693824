//! file_search and file_read forgive what small models get wrong: the calls
//! replayed here are the ones that failed against real models.

use pretty_assertions::assert_eq;
use serde_json::json;

use crate::Fx;

/// A folder of everyday files and no source code.
fn notes() -> Fx {
    let fx = Fx::new();
    fx.write("notes/a.txt", "groceries\n");
    fx.write("notes/b.md", "# Bills\nthe invoice is due friday\n");
    fx.write("notes/c.log", "ok\n");
    std::fs::write(fx.root().join("notes/d.bin"), b"invoice\0\x01").unwrap();
    fx
}

#[tokio::test]
async fn a_glob_written_from_the_root_or_from_path_both_find_the_file() {
    let fx = Fx::new();
    fx.write("src/a.py", "print(1)\n");
    fx.write("src/lib/b.py", "print(2)\n");
    fx.write("README.md", "x\n");
    let from_root = fx
        .ok("file_search", json!({"glob": "src/**/*.py", "path": "src"}))
        .await;
    assert_eq!(
        from_root,
        "src/a.py\nsrc/lib/b.py\n[2 files under src matching glob `src/**/*.py` \
         (read from the workspace root)]"
    );
    let from_path = fx
        .ok("file_search", json!({"glob": "lib/*.py", "path": "src"}))
        .await;
    assert_eq!(
        from_path,
        "src/lib/b.py\n[1 file under src matching glob `lib/*.py` (read relative to src)]"
    );
}

#[tokio::test]
async fn without_a_glob_every_text_file_is_searched_and_binaries_are_skipped() {
    let fx = notes();
    assert_eq!(
        fx.ok("file_search", json!({"pattern": "invoice"})).await,
        "notes/b.md:2: the invoice is due friday\n[1 matching line in 1 file under .]"
    );
}

#[tokio::test]
async fn a_copied_language_glob_still_finds_the_word_and_says_so() {
    // The call a model copied from the old description, in a folder of notes.
    let fx = notes();
    let out = fx
        .ok(
            "file_search",
            json!({"glob": "**/*.rs", "pattern": "invoice"}),
        )
        .await;
    assert_eq!(
        out,
        "[no file under . matches glob `**/*.rs`, so every file was searched (3 files); \
         these match]\nnotes/b.md:2: the invoice is due friday\n\
         [1 matching line in 1 file under .]"
    );
}

#[tokio::test]
async fn no_match_answers_say_what_was_searched() {
    let fx = notes();
    assert_eq!(
        fx.ok("file_search", json!({"pattern": "zzz"})).await,
        "no matches for `zzz` (regular expression, any case): searched 3 files under . \
         (1 file skipped as binary); hidden files and files ignored by .gitignore are skipped"
    );
    assert_eq!(
        fx.ok("file_search", json!({"glob": "*.rs", "path": "notes"}))
            .await,
        "no matches: no file under notes matches glob `*.rs`, tried relative to notes and \
         from the workspace root. The 4 files there include notes/a.txt, notes/b.md, \
         notes/c.log, notes/d.bin. Leave out glob to search every file; hidden files and \
         files ignored by .gitignore are skipped"
    );
    assert_eq!(
        fx.ok("file_search", json!({"glob": "*.md", "pattern": "zzz"}))
            .await,
        "no matches for `zzz` (regular expression, any case): searched the 1 file under . \
         matching glob `*.md` (of 4 files); hidden files and files ignored by .gitignore are \
         skipped"
    );
}

#[tokio::test]
async fn a_different_case_is_found_when_the_exact_case_is_not() {
    let fx = notes();
    assert_eq!(
        fx.ok("file_search", json!({"pattern": "Invoice"})).await,
        "[no line matches `Invoice` with its exact case; these match it in any case]\n\
         notes/b.md:2: the invoice is due friday\n[1 matching line in 1 file under .]"
    );
}

/// Qwen2.5-Coder-1.5B asked "which file mentions the word invoice" searched for `invoice`
/// in a folder whose file says `Invoice` (30-task set, search-word). A pattern with no
/// capital letter matches any case; one with a capital keeps its case; the argument wins.
#[tokio::test]
async fn a_lower_case_pattern_matches_any_case() {
    let fx = notes();
    fx.write("notes/c.md", "INVOICE 7\n");
    assert_eq!(
        fx.ok(
            "file_search",
            json!({"pattern": "invoice", "path": "notes"})
        )
        .await,
        "notes/b.md:2: the invoice is due friday\nnotes/c.md:1: INVOICE 7\n\
         [2 matching lines in 2 files under notes]"
    );
    assert_eq!(
        fx.ok(
            "file_search",
            json!({"pattern": "invoice", "path": "notes", "case_insensitive": false})
        )
        .await,
        "notes/b.md:2: the invoice is due friday\n[1 matching line in 1 file under notes]"
    );
    // An escape is not a capital: `\S` does not ask for the exact case.
    assert_eq!(
        fx.ok(
            "file_search",
            json!({"pattern": "invoice \\S*7", "path": "notes"})
        )
        .await,
        "notes/c.md:1: INVOICE 7\n[1 matching line in 1 file under notes]"
    );
}

/// Qwen2.5-Coder-1.5B asked which file mentions Acme Corp searched `{"path": "src",
/// "pattern": "Acme Corp"}` while the invoice naming it is in `docs` (30-task set,
/// search-zh), and answered that nothing does. A folder that has no match, however relaxed,
/// is followed by the whole workspace; one file is not.
#[tokio::test]
async fn a_folder_without_the_text_is_followed_by_the_whole_workspace() {
    let fx = Fx::new();
    fx.write("src/app.py", "print('hi')\n");
    fx.write("docs/invoice.md", "Billed to: ACME Corp\n");
    assert_eq!(
        fx.ok(
            "file_search",
            json!({"path": "src", "pattern": "Acme Corp"})
        )
        .await,
        "[no line under src matches `Acme Corp` (regular expression, exact case), so the whole \
         workspace was searched in any case (2 files); these match]\n\
         docs/invoice.md:1: Billed to: ACME Corp\n[1 matching line in 1 file under .]"
    );
    let one_file = fx
        .ok(
            "file_search",
            json!({"path": "src/app.py", "pattern": "Acme"}),
        )
        .await;
    assert!(one_file.starts_with("no matches for `Acme`"), "{one_file}");
}

/// Qwen2.5-Coder-1.5B searched `{"path": "meeting_notes.txt", "pattern": "meeting with
/// Dana"}`, a file it made up, twice, and answered from its own guess (30-task set,
/// search-day). A `path` that names nothing searches the whole workspace and says so; one
/// outside it is still refused.
#[tokio::test]
async fn a_path_that_names_nothing_searches_the_whole_workspace() {
    let fx = Fx::new();
    fx.write("docs/meeting.md", "Meeting with Dana on Tuesday\n");
    assert_eq!(
        fx.ok(
            "file_search",
            json!({"path": "meeting_notes.txt", "pattern": "meeting with dana"})
        )
        .await,
        "[path \"meeting_notes.txt\" does not exist in the workspace, so all of it was \
         searched]\ndocs/meeting.md:1: Meeting with Dana on Tuesday\n\
         [1 matching line in 1 file under .]"
    );
    assert!(crate::is_denied(
        &fx.err("file_search", json!({"path": "../x", "pattern": "a"}))
            .await
    ));
}

#[tokio::test]
async fn a_regex_the_engine_rejects_is_explained_and_searched_as_text() {
    let fx = Fx::new();
    fx.write("calc.txt", "total (net) = 5\n");
    assert_eq!(
        fx.ok("file_search", json!({"pattern": "total (net"})).await,
        "[`pattern` is not a regular expression this search accepts (unclosed group); \
         searched for it as plain text]\ncalc.txt:1: total (net) = 5\n\
         [1 matching line in 1 file under .]"
    );
    // The row count a model tried: a line break cannot match within a line.
    let out = fx.ok("file_search", json!({"pattern": "\\n"})).await;
    assert_eq!(
        out.lines().next(),
        Some(
            "[`pattern` is not a regular expression this search accepts (the literal \"\\n\" \
             is not allowed in a regex; patterns match within one line: to count lines, set \
             `count` and leave `pattern` out); searched for it as plain text]"
        )
    );
}

#[tokio::test]
async fn a_file_name_pattern_given_as_pattern_is_used_as_the_glob() {
    // The 1.5B model counting Python files ("src 目录下有几个 .py 文件？") wrote
    // {"pattern": "*.py", "path": "src", "count": true}: no line holds `*.py`.
    let fx = Fx::new();
    fx.write("src/app.py", "print(1)\n");
    fx.write("src/util.py", "def f():\n    pass\n");
    fx.write("src/readme.txt", "about *.py files\n");
    assert_eq!(
        fx.ok(
            "file_search",
            json!({"pattern": "*.py", "path": "src", "count": true})
        )
        .await,
        "[`*.py` is a file name pattern, so it was used as `glob` (the files it matches); \
         give `pattern` words to search inside files]\n\
         2 files under src matching glob `*.py`, 3 lines in all:\nsrc/app.py: 1 line\n\
         src/util.py: 2 lines"
    );
    // Text and regexes stay patterns; so does a file name pattern beside a glob.
    for pattern in ["about *.py", ".*\\.py$", "a*b"] {
        let out = fx.ok("file_search", json!({"pattern": pattern})).await;
        assert!(!out.contains("used as `glob`"), "{pattern}: {out}");
    }
    let out = fx
        .ok("file_search", json!({"pattern": "*.py", "glob": "*.txt"}))
        .await;
    assert!(out.contains("src/readme.txt:1: about *.py files"), "{out}");
}

#[tokio::test]
async fn a_phrase_found_nowhere_is_looked_for_word_by_word() {
    // The 1.5B model searched `meeting with Dana` for "the file that talks about a meeting
    // with Dana" and answered that no file mentions it.
    let fx = Fx::new();
    fx.write(
        "docs/meeting.md",
        "# Meeting\n\nMeeting on Tuesday with Dana about the budget.\n",
    );
    fx.write("docs/invoice.txt", "Invoice for Dana's shop.\n");
    fx.write("notes.md", "nothing here\n");
    assert_eq!(
        fx.ok(
            "file_search",
            json!({"pattern": "meeting with Dana", "path": "docs"})
        )
        .await,
        "[no line anywhere holds `meeting with Dana` (regular expression, exact case); these \
         lines hold its words (meeting, dana), from the 1 file that holds the most of them \
         (2 of 2)]\ndocs/meeting.md:1: # Meeting\ndocs/meeting.md:3: Meeting on Tuesday with \
         Dana about the budget.\n[2 matching lines in 1 file under .]"
    );
    // A regular expression across two lines of a file: its words, found line by line.
    fx.write(
        "data/deploy.yaml",
        "replicas: 3\nimage: registry.local/app:1.4.2\n",
    );
    let out = fx
        .ok("file_search", json!({"pattern": "replicas:.*?image:.*?"}))
        .await;
    assert!(
        out.ends_with(
            "these lines hold its words (replicas, image), from the 1 file that holds the most \
             of them (2 of 2)]\ndata/deploy.yaml:1: replicas: 3\ndata/deploy.yaml:2: image: \
             registry.local/app:1.4.2\n[2 matching lines in 1 file under .]"
        ),
        "{out}"
    );
    // One content word, or words no file holds two of: no such fallback.
    for pattern in ["the meeting", "meet(ing)? with Dana", "budget invoice"] {
        let out = fx.ok("file_search", json!({"pattern": pattern})).await;
        assert!(!out.contains("hold its words"), "{pattern}: {out}");
    }
}

#[tokio::test]
async fn a_pattern_over_several_lines_finds_any_of_its_lines() {
    // The 1.5B model asked for {"path": "data/deploy.yaml", "pattern": "replicas\ndeploy.yaml"}
    // and got an error: a pattern matches within one line.
    let fx = Fx::new();
    fx.write(
        "data/deploy.yaml",
        "replicas: 3\nimage: registry.local/app:1.4.2\n",
    );
    assert_eq!(
        fx.ok(
            "file_search",
            json!({"path": "data/deploy.yaml", "pattern": "replicas\nimage:"})
        )
        .await,
        "[`pattern` held line breaks, and a pattern matches within one line: searched for any \
         of its lines (`replicas`, `image:`)]\ndata/deploy.yaml:1: replicas: 3\n\
         data/deploy.yaml:2: image: registry.local/app:1.4.2\n\
         [2 matching lines in 1 file under data/deploy.yaml]"
    );
    let out = fx.ok("file_search", json!({"pattern": "replicas\n"})).await;
    assert!(out.contains("data/deploy.yaml:1: replicas: 3"), "{out}");
    // Lines that are not regular expressions are searched as written.
    let out = fx
        .ok(
            "file_search",
            json!({"pattern": "registry.local/app:1.4.2\nunclosed("}),
        )
        .await;
    assert!(out.contains("data/deploy.yaml:2: image"), "{out}");
}

#[tokio::test]
async fn a_regex_that_matches_no_line_but_file_names_lists_those_files() {
    // The 1.5B model, asked how many .py files src holds: {"glob": "src/*", "pattern": "\\.py$"}.
    let fx = Fx::new();
    fx.write("src/app.py", "print(1)\n");
    fx.write("src/util.py", "x = 1\n");
    fx.write("src/readme.txt", "about\n");
    assert_eq!(
        fx.ok("file_search", json!({"glob": "src/*", "pattern": "\\.py$"}))
            .await,
        "[no line under . matches `\\.py$` (regular expression, any case); the names of these 2 \
         files match it (to list files by name, leave `pattern` out and give `glob`, e.g. \
         `*.py`)]\nsrc/app.py\nsrc/util.py\n[2 files under . matching glob `src/*`]"
    );
    let counted = fx
        .ok(
            "file_search",
            json!({"path": "src", "pattern": "\\.py$", "count": true}),
        )
        .await;
    assert!(
        counted.contains("the names of these 2 files match it"),
        "{counted}"
    );
    // A folder listing says how many files of each kind it holds.
    assert_eq!(
        fx.ok("list_dir", json!({"path": "src"})).await,
        "src holds 2 .py files and 1 .txt file (3 entries in all):\napp.py  (9 bytes)\nreadme.txt  (6 bytes)\n\
         util.py  (6 bytes)"
    );
}

#[tokio::test]
async fn counts_lines_of_a_file_matching_lines_and_files() {
    let fx = Fx::new();
    fx.write("data.csv", "id,name\n1,a\n2,b\n3,c");
    fx.write("app.log", "ERROR x\nok\nERROR y\n");
    assert_eq!(
        fx.ok("file_search", json!({"path": "data.csv", "count": true}))
            .await,
        "1 file under data.csv, 4 lines in all:\ndata.csv: 4 lines (a header and 3 rows)"
    );
    assert_eq!(
        fx.ok("file_search", json!({"pattern": "ERROR", "count": true}))
            .await,
        "2 lines match `ERROR` (regular expression, exact case) in 1 file of the 2 files \
         searched under .:\napp.log: 2 matching"
    );
    assert_eq!(
        fx.ok("file_search", json!({"glob": "*.csv", "count": true}))
            .await,
        "1 file under . matching glob `*.csv`, 4 lines in all:\ndata.csv: 4 lines (a header and 3 rows)"
    );
    assert_eq!(
        fx.ok("file_read", json!({"path": "data.csv"})).await,
        "[data.csv: 4 lines: a header and 3 rows]\nid,name\n1,a\n2,b\n3,c"
    );
    // One file and no pattern (count-rows: the 1.5B model's `{"path": "data/users.csv"}`
    // answered "1 file under data/users.csv"): it is read whole, as file_read reads it.
    assert_eq!(
        fx.ok("file_search", json!({"path": "data.csv"})).await,
        "[data.csv is one file and no pattern was given, so here it is]\n[data.csv: 4 lines: a \
         header and 3 rows]\nid,name\n1,a\n2,b\n3,c"
    );
}

#[tokio::test]
async fn a_glob_that_selects_one_file_without_a_pattern_reads_it() {
    let fx = Fx::new();
    fx.write("data/deploy.yaml", "replicas: 3\nimage: app:1.4.2\n");
    fx.write("data/users.csv", "id\n1\n");
    // yaml-deploy: the 1.5B model asked `"glob": "data/deploy.yaml"` three times for the
    // replicas it sets, and was shown the name it had given each time.
    assert_eq!(
        fx.ok("file_search", json!({"glob": "data/deploy.yaml"}))
            .await,
        "[`data/deploy.yaml` selects one file, data/deploy.yaml, and no pattern was given, so \
         here it is]\nreplicas: 3\nimage: app:1.4.2\n"
    );
    // By name, from a folder.
    assert!(
        fx.ok(
            "file_search",
            json!({"glob": "deploy.yaml", "path": "data"})
        )
        .await
        .ends_with("replicas: 3\nimage: app:1.4.2\n")
    );
    // A glob with wildcards lists, even one file.
    assert_eq!(
        fx.ok("file_search", json!({"glob": "*.yaml"})).await,
        "data/deploy.yaml\n[1 file under . matching glob `*.yaml`]"
    );
    // Two files: listed, not read.
    let listed = fx.ok("file_search", json!({"glob": "data/*"})).await;
    assert!(
        listed.contains("data/deploy.yaml") && listed.contains("data/users.csv"),
        "{listed}"
    );
    assert!(!listed.contains("replicas"), "{listed}");
}

#[tokio::test]
async fn the_description_shows_no_file_type_a_model_could_copy() {
    let fx = Fx::new();
    let spec = fx.tools.get("file_search").unwrap().spec().clone();
    let text = format!("{} {}", spec.description, spec.parameters);
    let copied: Vec<&str> = text
        .split('`')
        .filter(|token| token.contains("*.") || token.ends_with(".rs"))
        .collect();
    assert_eq!(copied, Vec::<&str>::new());
}
