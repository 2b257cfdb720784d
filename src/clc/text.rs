//! Program text that is not all UTF-8, kept byte for byte. OpenCL C sources are bytes: a
//! string literal may hold Latin-1, a comment anything. clayout reads them as Rust strings and
//! must hand the device compiler the very bytes the application gave, so [`decode`] maps each
//! byte that is not part of valid UTF-8 to a code point of its own (Supplementary Private Use
//! Area-B, U+100000 + byte: no lexer rule of C treats such a character specially, and a source
//! cannot contain it by accident more than any other private-use character) and [`encode`] maps
//! them back.

const BASE: u32 = 0x10_0000;

/// The text of `bytes`, each invalid byte standing as one private-use character. None when the
/// source already holds characters of that range (then it cannot be told apart: such a program
/// is left as written).
pub fn decode(bytes: &[u8]) -> Option<String> {
    let mut out = String::with_capacity(bytes.len());
    let mut rest = bytes;
    loop {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                if s.chars().any(is_escape) {
                    return None;
                }
                out.push_str(s);
                return Some(out);
            }
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                let good = std::str::from_utf8(good).expect("valid up to here");
                if good.chars().any(is_escape) {
                    return None;
                }
                out.push_str(good);
                let n = e.error_len().unwrap_or(bad.len());
                for &b in &bad[..n] {
                    out.push(char::from_u32(BASE + b as u32).expect("a private-use code point"));
                }
                rest = &bad[n..];
            }
        }
    }
}

fn is_escape(c: char) -> bool {
    (BASE..BASE + 256).contains(&(c as u32))
}

/// The bytes `text` stands for: [`decode`]'s inverse.
pub fn encode(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    for c in text.chars() {
        if is_escape(c) {
            out.push((c as u32 - BASE) as u8);
        } else {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_string_comes_back() {
        let cases: [&[u8]; 5] = [b"plain", b"printf(\"\xe9t\xe9\");", b"\xff\xfe\x00end", b"caf\xc3\xa9 \xc3", b"\xc3"];
        for c in cases {
            let t = decode(c).unwrap();
            assert_eq!(encode(&t), c, "{t:?}");
        }
        // A byte sequence that is valid UTF-8 stays the same characters.
        assert_eq!(decode("é".as_bytes()).unwrap(), "é");
    }

    #[test]
    fn private_use_characters_already_there_are_refused() {
        assert_eq!(decode("\u{100041}".as_bytes()), None);
    }
}
