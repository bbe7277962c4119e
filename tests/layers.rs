//! The import rule of docs/architecture.md, checked from the source tree: a module imports only
//! from layers below it, the pure modules import nothing with I/O, and no new import circle
//! appears between the files of `src/`.
//!
//! The graph is read from the source text, not from the compiler: every `crate::`, `super::`,
//! `self::` and `<child module>::` path (in `use` trees, braces expanded, and inline) outside comments, string
//! literals and test code is resolved to the deepest module file it names. A path to a name
//! that a module re-exports therefore points at the re-exporting module, which is what a
//! reader following the path sees. Test code (`tests.rs`, `*_tests.rs`, `#[cfg(test)] mod`
//! blocks) is left out: a test may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first. A module may import from a strictly lower layer only; modules of
/// one layer do not import each other. The wire codec sits above the command layer so that
/// nothing from `command` down knows about the connection's bytes.
const LAYERS: &[&[&str]] = &[
    &[
        "protocol",
        "clock",
        "allocation",
        "host",
        "status",
        "latency",
        "sync",
    ],
    &["error"],
    &["calendar"],
    &["query", "auth", "log_line"],
    &["ttl", "profile", "recent_log"],
    &["storage"],
    &["engine", "version"],
    &["pipeline", "config"],
    &["command", "tls", "connection_string"],
    &["wire", "metrics"],
    &["session"],
    &["server", "tools"],
];

/// Modules that are pure (no I/O, no clock) and what each may import besides itself.
const PURE: &[(&str, &[&str])] = &[
    ("query", &["error", "protocol", "allocation", "sync"]),
    ("ttl", &["error"]),
    ("calendar", &["error"]),
    ("auth", &["error"]),
];

type Module = Vec<String>;

/// Every module file of `src/` (test files excepted) by module path: `src/engine/exec/mod.rs`
/// is `engine::exec`, `src/lib.rs` the root.
fn module_files(src: &Path) -> BTreeMap<Module, PathBuf> {
    let mut files = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "tests" {
                    dirs.push(path);
                }
                continue;
            }
            let Some(stem) = name.strip_suffix(".rs") else {
                continue;
            };
            if stem == "tests" || stem.ends_with("_tests") || (stem == "main" && dir == src) {
                continue;
            }
            let rel = path.strip_prefix(src).unwrap().with_extension("");
            let mut module: Module = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(stem, "mod" | "lib") {
                module.pop();
            }
            files.insert(module, path);
        }
    }
    files
}

/// `text` with comments, string and char literals blanked (their bytes replaced by spaces, so
/// offsets stay put).
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for byte in out.iter_mut().take(to).skip(from) {
            if *byte != b'\n' {
                *byte = b' ';
            }
        }
    };
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            // Block comments nest in Rust.
            let (mut depth, mut j) = (0usize, i);
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if b[i] == b'r'
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
            && raw_string_hashes(rest).is_some()
        {
            let hashes = raw_string_hashes(rest).unwrap();
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let start = i + 2 + hashes;
            let end = b[start..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |p| start + p + close.len());
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if b[i] == b'\'' {
            // A char literal ('x', '\n', '\u{..}'), or a lifetime, which is left alone.
            let len = if rest.get(1) == Some(&b'\\') {
                rest.iter().skip(2).position(|&c| c == b'\'').map(|p| p + 3)
            } else {
                let ch = std::str::from_utf8(&rest[1..]).ok().or_else(|| {
                    (2..=5)
                        .rev()
                        .find_map(|n| std::str::from_utf8(rest.get(1..n)?).ok())
                });
                ch.and_then(|s| s.chars().next()).and_then(|c| {
                    let after = 1 + c.len_utf8();
                    (rest.get(after) == Some(&b'\'')).then_some(after + 1)
                })
            };
            match len {
                Some(len) => {
                    blank(&mut out, i, i + len);
                    i += len;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `Some(n)` when `s` starts a raw string `r#…#"` with `n` hashes.
fn raw_string_hashes(s: &[u8]) -> Option<usize> {
    let hashes = s.iter().skip(1).take_while(|&&c| c == b'#').count();
    (s.get(1 + hashes) == Some(&b'"')).then_some(hashes)
}

/// `code` without the `#[cfg(test)] mod name { … }` blocks.
fn without_test_modules(code: &str) -> String {
    let mut out = code.to_owned();
    while let Some(at) = out.find("#[cfg(test)]") {
        let after = &out[at + "#[cfg(test)]".len()..];
        let trimmed = after.trim_start();
        let item = trimmed.trim_start_matches("pub ").trim_start();
        let block = item.starts_with("mod ") && {
            let head_end = item.find(['{', ';']).unwrap_or(item.len());
            item.as_bytes().get(head_end) == Some(&b'{')
        };
        let start_of_item = at + "#[cfg(test)]".len() + (after.len() - trimmed.len());
        if !block {
            // Not a test module block: drop only the attribute.
            out.replace_range(at..start_of_item, "");
            continue;
        }
        let open = start_of_item + out[start_of_item..].find('{').unwrap();
        let mut depth = 0usize;
        let mut end = out.len();
        for (k, c) in out[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.replace_range(at..end, "");
    }
    out
}

/// The paths of a use tree or inline path starting at `s` (just after `crate::` or the like),
/// braces expanded: `{a::B, c::{d, e}}` gives `[a, B]`, `[c, d]`, `[c, e]`.
fn use_tree(s: &str) -> Vec<Vec<String>> {
    let mut parser = TreeParser { s, at: 0 };
    parser.tree(&[])
}

struct TreeParser<'s> {
    s: &'s str,
    at: usize,
}

impl TreeParser<'_> {
    fn skip_space(&mut self) {
        while self.s[self.at..].starts_with(char::is_whitespace) {
            self.at += self.s[self.at..].chars().next().unwrap().len_utf8();
        }
    }

    fn ident(&mut self) -> Option<String> {
        self.skip_space();
        let rest = &self.s[self.at..];
        let len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '*'))
            .unwrap_or(rest.len());
        (len > 0).then(|| {
            self.at += len;
            rest[..len].to_owned()
        })
    }

    fn eat(&mut self, token: &str) -> bool {
        self.skip_space();
        let found = self.s[self.at..].starts_with(token);
        if found {
            self.at += token.len();
        }
        found
    }

    fn tree(&mut self, prefix: &[String]) -> Vec<Vec<String>> {
        let mut path = prefix.to_vec();
        loop {
            if self.eat("{") {
                return self.group(&path);
            }
            let Some(segment) = self.ident() else {
                return vec![path];
            };
            path.push(segment);
            if !self.eat("::") {
                return vec![path];
            }
        }
    }

    fn group(&mut self, prefix: &[String]) -> Vec<Vec<String>> {
        let mut paths = Vec::new();
        while self.at < self.s.len() {
            if self.eat("}") {
                break;
            }
            paths.extend(self.tree(prefix));
            if self.eat("as") {
                self.ident();
            }
            if !self.eat(",") && !self.eat("}") {
                self.at += 1;
            } else if self.s[..self.at].ends_with('}') {
                break;
            }
        }
        paths
    }
}

/// The file-level import graph: each module and the modules outside it that its code names. A
/// path through a name a module binds with `use` (a re-export `pub use child::Name;`, or a
/// private `use` its submodules reach by `super::Name`) is followed to the name's source, as
/// the compiler resolves it: the edge names the real home, and the importing module keeps its
/// own edge to that home.
fn import_graph(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let files = module_files(src);
    let mut paths: BTreeMap<Module, Vec<(Vec<String>, bool)>> = BTreeMap::new();
    for (module, path) in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let code = without_test_modules(&code_only(&text));
        paths.insert(module.clone(), named_paths(module, &files, &code));
    }
    // What each module imports by `use`: the name it binds and the path the name comes from.
    let mut reexports: BTreeMap<Module, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for (module, named) in &paths {
        for (path, imported) in named {
            if let (true, Some(name)) = (*imported, path.last()) {
                if name != "*" {
                    reexports
                        .entry(module.clone())
                        .or_default()
                        .insert(name.clone(), path.clone());
                }
            }
        }
    }
    let mut graph = BTreeMap::new();
    for (module, named) in &paths {
        let mut targets = BTreeSet::new();
        for (path, _) in named {
            if let Some(target) = resolve(path, &files, &reexports) {
                // A module's own submodules are part of it (a folder's `mod.rs` uses its
                // children, the children the folder's shared items): an edge down into them is
                // no import between modules.
                if !target.starts_with(module) {
                    targets.insert(target);
                }
            }
        }
        graph.insert(module.clone(), targets);
    }
    graph
}

/// The deepest module file `path` names, following re-exports (a few hops at most).
fn resolve(
    path: &[String],
    files: &BTreeMap<Module, PathBuf>,
    reexports: &BTreeMap<Module, BTreeMap<String, Vec<String>>>,
) -> Option<Module> {
    let mut path = path.to_vec();
    for _ in 0..8 {
        let home = (1..=path.len())
            .rev()
            .map(|k| path[..k].to_vec())
            .find(|m| files.contains_key(m))?;
        let next = path.get(home.len());
        match next.and_then(|name| reexports.get(&home)?.get(name)) {
            Some(source) if source.as_slice() != path.as_slice() => {
                let mut followed = source.clone();
                followed.extend(path.iter().skip(home.len() + 1).cloned());
                path = followed;
            }
            _ => return Some(home),
        }
    }
    None
}

/// Every path `code` (of `module`) names, made absolute, and whether it is a `use` (which binds
/// the name in the module). A path may start at `crate::`, `super::`, `self::` or a child module's bare
/// name (`use child::x;`, `child::f()`), which Rust resolves as `self::child`.
fn named_paths(
    module: &Module,
    files: &BTreeMap<Module, PathBuf>,
    code: &str,
) -> Vec<(Vec<String>, bool)> {
    let children = files
        .keys()
        .filter(|m| m.len() == module.len() + 1 && m.starts_with(module))
        .filter_map(|m| m.last().cloned());
    let keywords = ["crate", "super", "self"]
        .into_iter()
        .map(str::to_owned)
        .chain(children);
    let mut named = Vec::new();
    for keyword in keywords {
        let pattern = format!("{keyword}::");
        for (at, _) in code.match_indices(&pattern) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '$') {
                continue;
            }
            let imported = is_use(&code[..at]);
            for segments in use_tree(&code[at + pattern.len()..]) {
                let (mut base, mut rest): (Module, &[String]) = match keyword.as_str() {
                    "crate" => (Vec::new(), &segments),
                    "self" => (module.clone(), &segments),
                    "super" => (module[..module.len().saturating_sub(1)].to_vec(), &segments),
                    child => {
                        let mut base = module.clone();
                        base.push(child.to_owned());
                        (base, &segments)
                    }
                };
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
                base.extend(rest.iter().filter(|s| *s != "self").cloned());
                named.push((base, imported));
            }
        }
    }
    named
}

/// Whether the path starting right after `head` is the tree of a `use` (of any visibility: a
/// private `use` in a folder's `mod.rs` binds the name for its submodules' `super::` paths too).
fn is_use(head: &str) -> bool {
    head.trim_end()
        .strip_suffix("use")
        .is_some_and(|before| !before.ends_with(|c: char| c.is_alphanumeric() || c == '_'))
}

/// The strongly connected components of more than one module (Tarjan's algorithm, iterative).
fn circles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<BTreeSet<Module>> {
    let nodes: Vec<&Module> = graph.keys().collect();
    let id: BTreeMap<&Module, usize> = nodes.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    let edges: Vec<Vec<usize>> = nodes
        .iter()
        .map(|m| {
            graph[*m]
                .iter()
                .filter_map(|t| id.get(t).copied())
                .collect()
        })
        .collect();
    let n = nodes.len();
    let (mut index, mut low, mut on_stack) = (vec![usize::MAX; n], vec![0; n], vec![false; n]);
    let (mut stack, mut found, mut next) = (Vec::new(), Vec::new(), 0);
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work = vec![(root, 0usize)];
        while let Some(&mut (v, ref mut child)) = work.last_mut() {
            if *child == 0 && index[v] == usize::MAX {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if let Some(&w) = edges[v].get(*child) {
                *child += 1;
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut component = BTreeSet::new();
                loop {
                    let w = stack.pop().unwrap();
                    on_stack[w] = false;
                    component.insert(nodes[w].clone());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    found.push(component);
                }
            }
        }
    }
    found
}

fn name(module: &Module) -> String {
    if module.is_empty() {
        "crate".to_owned()
    } else {
        module.join("/")
    }
}

fn layer_of(top: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&top))
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn every_top_level_module_has_a_layer() {
    let tops: BTreeSet<String> = module_files(&src_dir())
        .into_keys()
        .filter_map(|m| m.first().cloned())
        .collect();
    let missing: Vec<&String> = tops.iter().filter(|t| layer_of(t).is_none()).collect();
    assert!(
        missing.is_empty(),
        "modules without a layer in tests/layers.rs (and docs/architecture.md): {missing:?}"
    );
}

#[test]
fn modules_import_only_from_lower_layers_and_pure_ones_only_pure_code() {
    let graph = import_graph(&src_dir());
    let mut violations = Vec::new();
    for (from, targets) in &graph {
        let Some(from_top) = from.first() else {
            continue;
        };
        for to in targets {
            let Some(to_top) = to.first() else {
                continue;
            };
            if from_top == to_top {
                continue;
            }
            let (Some(a), Some(b)) = (layer_of(from_top), layer_of(to_top)) else {
                continue;
            };
            if b >= a {
                violations.push(format!(
                    "{} -> {} (not a lower layer)",
                    name(from),
                    name(to)
                ));
            }
            if let Some((_, allowed)) = PURE.iter().find(|(m, _)| m == from_top) {
                let pure_peer = PURE.iter().any(|(m, _)| m == to_top);
                if !allowed.contains(&to_top.as_str()) && !pure_peer {
                    violations.push(format!("{} -> {} (pure code)", name(from), name(to)));
                }
            }
        }
    }
    assert!(
        violations.is_empty(),
        "imports against the layer rule:\n{}",
        violations.join("\n")
    );
}

/// The circles docs/architecture.md names, from its fenced `circles` block: one line each,
/// the member files separated by spaces.
fn documented_circles() -> Vec<BTreeSet<String>> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
            .unwrap();
    let block = doc
        .split("```circles\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/architecture.md has a ```circles block");
    block
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect()
}

#[test]
fn no_import_circle_but_the_documented_ones() {
    let found: Vec<BTreeSet<String>> = circles(&import_graph(&src_dir()))
        .iter()
        .map(|c| c.iter().map(name).collect())
        .collect();
    let documented = documented_circles();
    let mut problems = Vec::new();
    for circle in &found {
        if !documented.iter().any(|d| circle.is_subset(d)) {
            problems.push(format!(
                "a new or larger import circle: {}",
                circle.iter().cloned().collect::<Vec<_>>().join(" ")
            ));
        }
    }
    for circle in &documented {
        if !found.iter().any(|f| f.is_subset(circle) && f.len() > 1) {
            problems.push(format!(
                "a documented circle no longer exists; remove it from docs/architecture.md: {}",
                circle.iter().cloned().collect::<Vec<_>>().join(" ")
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_reader_resolves_use_trees_and_skips_comments_strings_and_tests() {
    assert_eq!(
        use_tree("{a::B, c::{d, e as f}, g}; more"),
        vec![
            vec!["a".to_owned(), "B".to_owned()],
            vec!["c".to_owned(), "d".to_owned()],
            vec!["c".to_owned(), "e".to_owned()],
            vec!["g".to_owned()],
        ]
    );
    assert_eq!(
        use_tree("engine::exec::execute(&x)"),
        vec![vec![
            "engine".to_owned(),
            "exec".to_owned(),
            "execute".to_owned()
        ]]
    );
    let code = code_only(
        "let a = \"crate::x\"; // crate::y\n/* crate::z /* nested */ */ let c = '\"'; fn f<'a>() {}\nr#\"crate::w\"#",
    );
    assert!(!code.contains("crate::"), "{code}");
    assert!(code.contains("fn f<'a>()"), "{code}");
    let code = without_test_modules(
        "use crate::a;\n#[cfg(test)]\nmod tests {\n use crate::b; { }\n}\nuse crate::c;",
    );
    assert!(code.contains("crate::a") && code.contains("crate::c"));
    assert!(!code.contains("crate::b"), "{code}");
}
