//! Structure definitions in OpenCL C source: where a structure type is defined, through
//! typedefs and type-like macros, and what its member declarations are.
//!
//! clayout moves a structure as S words of w bytes (4 or 8, the sizes the conversion kernels
//! move). Members may be builtin scalars and vectors of any fixed size, arrays of them (of any
//! number of dimensions), and structures (named, or defined inside), flattened: a member smaller
//! than a word lives inside one word, a member larger than a word spans several. The runtime
//! needs only the word size ([`word_size`]; S, padding included, comes from the compiler itself,
//! by the runtime's probe); the rewriter needs each member's place (`struct_layout`), which is
//! stricter about what it accepts: an array length it cannot read or an attribute that could move
//! a member.

use super::lex::{is_attribute, lex, matching_bracket, Token, TokenKind};
use super::typedefs::{declarators, TypeTable};
use super::types::Builtin;

/// A structure definition found in the source.
pub struct StructDef {
    /// The name it was looked up by (`Cell`, `struct cell`); `struct` for one defined inside
    /// another without a tag.
    pub name: String,
    /// The tokens between the braces, preprocessor lines left out.
    pub body: Vec<Token>,
    /// The tokens after the closing brace up to the `;` (declarator names, attributes).
    pub trailer: Vec<Token>,
}

/// What a member declaration's type is.
pub enum MemberType {
    /// A builtin scalar or vector with a fixed size.
    Builtin(Builtin),
    /// A structure type named by the declaration (`struct vec`, `vec3_t`), as written.
    Named(String),
    /// A structure defined in the declaration itself: `struct { float x, y; } pos;`.
    Inline(StructDef),
}

/// One member declaration: `const float4 a, b[3];`.
pub struct Member {
    pub ty: MemberType,
    pub declarators: Vec<MemberName>,
    /// Written with `__attribute__((...))`, which may change the members' alignment.
    pub attributes: bool,
    /// The declaration as written, for messages.
    pub shown: String,
}

/// One name of a member declaration, with its array dimensions.
pub struct MemberName {
    pub name: String,
    /// Empty for a plain member, `[N]` for `name[N]`, `[N, K]` for `name[N][K]`, each an
    /// integer constant expression of literals greater than zero; `None` for a length the source
    /// does not spell that way (`name[LEN]` before preprocessing, `name[]`).
    pub dims: Option<Vec<u32>>,
    /// The declarator as written, for messages.
    pub shown: String,
}

/// Typedef chains longer than this are cycles.
const MAX_HOPS: usize = 8;

/// Structures nested deeper than this are refused (and cycles stopped).
pub const MAX_NESTING: usize = 8;

/// A program's text read once for structure definitions: its tokens and its type names.
pub struct Program<'s> {
    pub src: &'s str,
    /// The tokens, comments and preprocessor lines left out.
    code: Vec<Token>,
    pub types: TypeTable,
    /// Names `#define`d more than once, differently (in `#if` branches, before the program is
    /// preprocessed): what they stand for is not known here.
    ambiguous: Vec<String>,
}

impl<'s> Program<'s> {
    pub fn new(src: &'s str) -> Program<'s> {
        let all: Vec<Token> = lex(src).into_iter().filter(|t| !t.is_comment()).collect();
        let types = TypeTable::from_tokens(src, &all);
        let mut defines: Vec<(String, String)> = Vec::new();
        for t in all.iter().filter(|t| t.kind == TokenKind::Directive) {
            let text = t.text(src)[1..].trim_start();
            if let Some(rest) = text.strip_prefix("define") {
                let rest = rest.trim_start();
                let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
                let body: Vec<&str> = rest[end..].split_whitespace().collect();
                defines.push((rest[..end].to_string(), body.join(" ")));
            }
        }
        let mut ambiguous: Vec<String> = defines
            .iter()
            .filter(|(n, b)| defines.iter().any(|(m, c)| m == n && c != b))
            .map(|(n, _)| n.clone())
            .collect();
        ambiguous.dedup();
        // Which branch of an `#if` the compiler sees is not known here: read both.
        let code = all.into_iter().filter(|t| t.kind != TokenKind::Directive).collect();
        Program { src, code, types, ambiguous }
    }

    /// The type `name` stands for after following typedefs and type-like macros, or why that
    /// is not known: a name on the way that is `#define`d more than once, differently.
    pub fn resolve<'a>(&'a self, name: &'a str) -> Result<&'a str, String> {
        let mut cur = name.trim();
        for _ in 0..=MAX_HOPS * 2 {
            if self.ambiguous.iter().any(|a| a == cur) {
                return Err(format!(
                    "`{cur}` is `#define`d more than once, differently (in `#if` branches?): which definition the compiler sees is not known here"
                ));
            }
            match self.types.alias(cur) {
                Some(next) => cur = next,
                None => return Ok(cur),
            }
        }
        Ok(self.types.resolve(name))
    }

    /// The definition of structure type `name` (`option_t`, `struct cell`, `Cell`), following
    /// typedefs (`typedef struct cell Cell;`) and type-like macros one name at a time.
    pub fn find(&self, name: &str) -> Result<StructDef, String> {
        let name = name.trim();
        let mut cur = name;
        for _ in 0..=MAX_HOPS {
            if self.ambiguous.iter().any(|a| a == cur) {
                return Err(format!(
                    "`{cur}` is `#define`d more than once, differently (in `#if` branches?): which definition the compiler sees is not known here"
                ));
            }
            if let Some(def) = definition(self.src, &self.code, cur, name)? {
                return Ok(def);
            }
            match self.types.alias(cur) {
                Some(next) => cur = next,
                None => return Err(format!("no definition of structure `{name}` found in the program source")),
            }
        }
        Err(format!("typedef chain for `{name}` is too deep"))
    }
}

/// The definition of structure type `name`; see [`Program::find`].
pub fn find(src: &str, name: &str) -> Result<StructDef, String> {
    Program::new(src).find(name)
}

/// The definition that `name` names directly, `struct tag {...}` for `struct tag`, `typedef
/// struct [tag] {...} name;` for a typedef name, as the definition of `asked`.
fn definition(src: &str, toks: &[Token], name: &str, asked: &str) -> Result<Option<StructDef>, String> {
    let (is_tag, ident) = match name.strip_prefix("struct") {
        Some(rest) if rest.starts_with(char::is_whitespace) => (true, rest.trim()),
        _ => (false, name),
    };
    let text = |i: usize| toks.get(i).map(|t| t.text(src)).unwrap_or("");
    let mut found: Option<StructDef> = None;
    for i in 0..toks.len() {
        if text(i) != "struct" {
            continue;
        }
        let tag = (toks.get(i + 1).map(|t| t.kind) == Some(TokenKind::Ident)).then(|| text(i + 1));
        let open = if tag.is_some() { i + 2 } else { i + 1 };
        if text(open) != "{" {
            continue;
        }
        let close = matching_bracket(src, toks, open)
            .ok_or_else(|| format!("unbalanced braces in the definition of `{asked}`"))?
            - 1;
        let end = (close + 1..toks.len()).find(|&k| text(k) == ";").unwrap_or(toks.len());
        let trailer = &toks[close + 1..end];
        let defines = if is_tag {
            tag == Some(ident)
        } else {
            // typedef struct [tag] { ... } Name;  (the typedef may not be the declaration's
            // first word: `typedef const struct {`, so look back a little)
            let typedef = (i.saturating_sub(2)..i).any(|k| text(k) == "typedef");
            typedef && declarators(src, trailer).iter().any(|d| d.plain && d.name == ident)
        };
        if defines {
            let def =
                StructDef { name: asked.to_string(), body: toks[open + 1..close].to_vec(), trailer: trailer.to_vec() };
            match &found {
                // Alternatives of conditional compilation that agree token for token are one.
                Some(f) if !same_tokens(src, &f.body, &def.body) || !same_tokens(src, &f.trailer, &def.trailer) => {
                    return Err(format!(
                        "`{asked}` is defined more than once, differently (in `#if` branches?): which one the compiler sees is not known here"
                    ))
                }
                Some(_) => {}
                None => found = Some(def),
            }
        }
    }
    Ok(found)
}

fn same_tokens(src: &str, a: &[Token], b: &[Token]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.text(src) == y.text(src))
}

impl StructDef {
    /// The member declarations. Types are resolved through `types`; array lengths and
    /// attributes are read but not judged: that is for the caller.
    pub fn members(&self, prog: &Program) -> Result<Vec<Member>, String> {
        let src = prog.src;
        let mut out = Vec::new();
        let mut depth = 0usize;
        let mut start = 0;
        for (k, t) in self.body.iter().enumerate() {
            match t.text(src) {
                "{" | "(" | "[" if t.kind == TokenKind::Punct => depth += 1,
                "}" | ")" | "]" if t.kind == TokenKind::Punct => depth = depth.saturating_sub(1),
                ";" if depth == 0 && t.kind == TokenKind::Punct => {
                    if k > start {
                        out.push(member(prog, &self.body[start..k])?);
                    }
                    start = k + 1;
                }
                _ => {}
            }
        }
        if start < self.body.len() {
            return Err(format!("member declaration `{}` has no `;`", shown(src, &self.body[start..])));
        }
        Ok(out)
    }

    /// Whether attributes after the closing brace (`__attribute__((packed))`) may change the
    /// layout.
    pub fn has_attributes(&self, src: &str) -> bool {
        self.trailer.iter().any(|t| t.text(src).starts_with("__attribute"))
    }
}

fn shown(src: &str, toks: &[Token]) -> String {
    toks.iter().map(|t| t.text(src)).collect::<Vec<_>>().join(" ")
}

fn member(prog: &Program, decl: &[Token]) -> Result<Member, String> {
    let (src, types) = (prog.src, &prog.types);
    let shown_decl = shown(src, decl);
    let (toks, attributes) = without_attributes(src, decl);
    let why = format!("member `{shown_decl}` is a union, enum, pointer or bit-field");
    let unsupported = move || why.clone();
    let mut i = 0;
    while i < toks.len() && matches!(toks[i].text(src), "const" | "volatile" | "__const") {
        i += 1;
    }
    // A structure defined in the declaration, or named by its tag.
    if toks.get(i).is_some_and(|t| t.text(src) == "struct") {
        let tagged = toks.get(i + 1).is_some_and(|t| t.kind == TokenKind::Ident);
        let open = i + 1 + tagged as usize;
        let (ty, rest) = if toks.get(open).is_some_and(|t| t.is_punct(src, "{")) {
            let close =
                matching_bracket(src, &toks, open).ok_or_else(|| format!("unbalanced braces in `{shown_decl}`"))?;
            let def =
                StructDef { name: "struct".into(), body: toks[open + 1..close - 1].to_vec(), trailer: Vec::new() };
            (MemberType::Inline(def), &toks[close..])
        } else if tagged {
            (MemberType::Named(format!("struct {}", toks[i + 1].text(src))), &toks[i + 2..])
        } else {
            return Err(format!("member declaration `{shown_decl}` is not understood"));
        };
        return finish(src, ty, rest, attributes, shown_decl, &unsupported);
    }
    if toks[i..].iter().any(|t| matches!(t.text(src), "union" | "enum" | "{")) {
        return Err(unsupported());
    }
    let (ty, rest) =
        split_type(src, &toks[i..]).ok_or_else(|| format!("member declaration `{shown_decl}` is not understood"))?;
    let resolved = prog.resolve(&ty)?;
    let ty = if let Some(b) = Builtin::parse(resolved).filter(|b| b.scalar.size().is_some()) {
        MemberType::Builtin(b)
    } else if resolved.starts_with("struct ") || types.is_typedef(&ty) || resolved != ty {
        // A typedef of a structure, or a name the finder follows further.
        MemberType::Named(ty)
    } else {
        return Err(format!("member type `{ty}` is not a builtin type of a fixed size or a structure"));
    };
    finish(src, ty, rest, attributes, shown_decl, &unsupported)
}

fn finish(
    src: &str,
    ty: MemberType,
    rest: &[Token],
    attributes: bool,
    shown_decl: String,
    unsupported: &dyn Fn() -> String,
) -> Result<Member, String> {
    let mut depth = 0usize;
    for t in rest {
        match t.text(src) {
            "[" => depth += 1,
            "]" => depth = depth.saturating_sub(1),
            "*" | ":" | "(" if depth == 0 => return Err(unsupported()),
            _ => {}
        }
    }
    let mut declarators = Vec::new();
    for d in rest.split(|t| t.is_punct(src, ",")) {
        let shown = shown(src, d);
        let (name, dims) =
            member_name(src, d).ok_or_else(|| format!("declarator `{shown}` in `{shown_decl}` is not understood"))?;
        declarators.push(MemberName { name, dims, shown });
    }
    Ok(Member { ty, declarators, attributes, shown: shown_decl })
}

/// The tokens with every `__attribute__((...))` taken out, and whether there was one.
fn without_attributes(src: &str, decl: &[Token]) -> (Vec<Token>, bool) {
    let mut out = Vec::new();
    let mut found = false;
    let mut i = 0;
    while i < decl.len() {
        if is_attribute(decl[i].text(src)) {
            found = true;
            i = match decl.get(i + 1) {
                Some(t) if t.is_punct(src, "(") => matching_bracket(src, decl, i + 1).unwrap_or(decl.len()),
                _ => i + 1,
            };
            continue;
        }
        out.push(decl[i]);
        i += 1;
    }
    (out, found)
}

/// Splits `unsigned int a, b[4]` into the type (`unsigned int`) and the declarators.
fn split_type<'t>(src: &str, decl: &'t [Token]) -> Option<(String, &'t [Token])> {
    let mut words = Vec::new();
    let mut i = 0;
    while i < decl.len() {
        let t = decl[i];
        let s = t.text(src);
        if t.kind != TokenKind::Ident {
            break;
        }
        if matches!(s, "const" | "volatile" | "__const") {
            i += 1;
            continue;
        }
        let type_word = matches!(s, "unsigned" | "signed" | "char" | "short" | "long" | "int") || words.is_empty();
        if !type_word {
            break;
        }
        words.push(s);
        i += 1;
    }
    if words.is_empty() || i >= decl.len() {
        return None;
    }
    Some((words.join(" "), &decl[i..]))
}

/// `name` (no dimensions) or `name[...]...`: the dimensions when each is an integer constant
/// expression of literals greater than zero, else `None`.
fn member_name(src: &str, d: &[Token]) -> Option<(String, Option<Vec<u32>>)> {
    let name = d.first().filter(|t| t.kind == TokenKind::Ident)?.text(src).to_string();
    let mut dims = Some(Vec::new());
    let mut k = 1;
    while k < d.len() {
        if !d[k].is_punct(src, "[") {
            return None;
        }
        let close = matching_bracket(src, d, k)? - 1;
        let n = const_int(src, &d[k + 1..close]).filter(|&n| n > 0 && n <= u32::MAX as i64);
        dims = match (dims, n) {
            (Some(mut v), Some(n)) => {
                v.push(n as u32);
                Some(v)
            }
            _ => None,
        };
        k = close + 1;
    }
    Some((name, dims))
}

/// The value of an integer constant expression of literals (`19`, `(3 * 3)`, `0x10`, `2u`):
/// `+ - * / %`, unary `-` and `+`, parentheses. `None` for anything else (a name, a macro the
/// preprocessor has not expanded, an overflow, a division by zero).
pub fn const_int(src: &str, toks: &[Token]) -> Option<i64> {
    let mut p = ConstParser { src, toks, k: 0 };
    let v = p.sum()?;
    (p.k == toks.len()).then_some(v)
}

struct ConstParser<'a> {
    src: &'a str,
    toks: &'a [Token],
    k: usize,
}

impl ConstParser<'_> {
    fn peek(&self) -> &str {
        self.toks.get(self.k).map_or("", |t| t.text(self.src))
    }

    fn sum(&mut self) -> Option<i64> {
        let mut v = self.product()?;
        loop {
            match self.peek() {
                "+" => {
                    self.k += 1;
                    v = v.checked_add(self.product()?)?;
                }
                "-" => {
                    self.k += 1;
                    v = v.checked_sub(self.product()?)?;
                }
                _ => return Some(v),
            }
        }
    }

    fn product(&mut self) -> Option<i64> {
        let mut v = self.unary()?;
        loop {
            let op = self.peek().to_string();
            if !matches!(op.as_str(), "*" | "/" | "%") {
                return Some(v);
            }
            self.k += 1;
            let r = self.unary()?;
            v = match op.as_str() {
                "*" => v.checked_mul(r)?,
                "/" => v.checked_div(r)?,
                _ => v.checked_rem(r)?,
            };
        }
    }

    fn unary(&mut self) -> Option<i64> {
        match self.peek() {
            "-" => {
                self.k += 1;
                self.unary()?.checked_neg()
            }
            "+" => {
                self.k += 1;
                self.unary()
            }
            "(" => {
                self.k += 1;
                let v = self.sum()?;
                (self.peek() == ")").then_some(())?;
                self.k += 1;
                Some(v)
            }
            _ => {
                let t = self.toks.get(self.k).filter(|t| t.kind == TokenKind::Number)?;
                self.k += 1;
                int_literal(t.text(self.src))
            }
        }
    }
}

/// A C integer literal: decimal, `0x` hexadecimal or `0` octal, with `u`/`l` suffixes.
fn int_literal(s: &str) -> Option<i64> {
    let s = s.trim_end_matches(['u', 'U', 'l', 'L']);
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return i64::from_str_radix(h, 16).ok();
    }
    if s.len() > 1 && s.starts_with('0') {
        return i64::from_str_radix(&s[1..], 8).ok();
    }
    s.parse().ok()
}

/// The word size for a structure whose members are scalars of `sizes` bytes (every lane of
/// every leaf member): the greatest common divisor, at most 8, so that no scalar straddles two
/// words in a way that depends on the word; below 4 bytes, 4 (several small members then share
/// a word, which the conversions move as a whole: the caller checks that the structure's size
/// is a multiple of it).
pub fn word_of_sizes(sizes: impl IntoIterator<Item = u32>) -> Option<u32> {
    let g = sizes.into_iter().fold(0u32, gcd);
    (g > 0).then(|| g.clamp(4, 8))
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The word size of structure type `type_name` (as written in a kernel parameter: `option_t`,
/// `struct cell`, `Cell`), or the reason it is not supported: see [`word_of_sizes`]. Lenient
/// about array lengths and attributes, which only the compiler's `sizeof` needs to know.
pub fn word_size(src: &str, type_name: &str) -> Result<u32, String> {
    let prog = Program::new(src);
    let def = prog.find(type_name)?;
    let mut sizes = Vec::new();
    scalar_sizes(&prog, &def, 0, &mut sizes)?;
    word_of_sizes(sizes).ok_or_else(|| "the structure has no members".into())
}

fn scalar_sizes(prog: &Program, def: &StructDef, depth: usize, out: &mut Vec<u32>) -> Result<(), String> {
    if depth > MAX_NESTING {
        return Err(format!("structures nested more than {MAX_NESTING} deep in `{}`", def.name));
    }
    for m in def.members(prog)? {
        match &m.ty {
            MemberType::Builtin(b) => out.push(b.scalar.size().unwrap_or(0)),
            MemberType::Named(n) => scalar_sizes(prog, &prog.find(n)?, depth + 1, out)?,
            MemberType::Inline(d) => scalar_sizes(prog, d, depth + 1, out)?,
        }
    }
    Ok(())
}
