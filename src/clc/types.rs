//! OpenCL C's builtin scalar and vector types: the one table that every reader of a type name
//! asks (annotation validation, structure members, the rewriter's parameters and declarations),
//! so that they agree on which spellings name which type.

/// A builtin scalar type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scalar {
    Bool,
    Char,
    UChar,
    Short,
    UShort,
    Int,
    UInt,
    Long,
    ULong,
    Half,
    Float,
    Double,
    SizeT,
    PtrdiffT,
    IntPtrT,
    UIntPtrT,
}

/// Per scalar: its one-word name, its size in bytes (`None` where the device decides: `bool`
/// and the address-sized types), whether it is an integer and signed, whether it has vectors.
struct Info {
    scalar: Scalar,
    name: &'static str,
    size: Option<u32>,
    int: Option<Signed>,
    vectors: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Signed {
    Yes,
    No,
}

const fn info(scalar: Scalar, name: &'static str, size: Option<u32>, int: Option<Signed>, vectors: bool) -> Info {
    Info { scalar, name, size, int, vectors }
}

const TABLE: [Info; 16] = [
    info(Scalar::Bool, "bool", None, None, false),
    info(Scalar::Char, "char", Some(1), Some(Signed::Yes), true),
    info(Scalar::UChar, "uchar", Some(1), Some(Signed::No), true),
    info(Scalar::Short, "short", Some(2), Some(Signed::Yes), true),
    info(Scalar::UShort, "ushort", Some(2), Some(Signed::No), true),
    info(Scalar::Int, "int", Some(4), Some(Signed::Yes), true),
    info(Scalar::UInt, "uint", Some(4), Some(Signed::No), true),
    info(Scalar::Long, "long", Some(8), Some(Signed::Yes), true),
    info(Scalar::ULong, "ulong", Some(8), Some(Signed::No), true),
    info(Scalar::Half, "half", Some(2), None, true),
    info(Scalar::Float, "float", Some(4), None, true),
    info(Scalar::Double, "double", Some(8), None, true),
    info(Scalar::SizeT, "size_t", None, Some(Signed::No), false),
    info(Scalar::PtrdiffT, "ptrdiff_t", None, Some(Signed::Yes), false),
    info(Scalar::IntPtrT, "intptr_t", None, Some(Signed::Yes), false),
    info(Scalar::UIntPtrT, "uintptr_t", None, Some(Signed::No), false),
];

/// The lane counts of OpenCL C's vector types.
const LANES: [u32; 5] = [2, 3, 4, 8, 16];

impl Scalar {
    fn info(self) -> &'static Info {
        TABLE.iter().find(|i| i.scalar == self).expect("every scalar is in the table")
    }

    /// The scalar a type name spells, word order free as in C (`unsigned long int`, `int
    /// unsigned`, `uint`, `signed`); OpenCL's `long` is 64 bits and it has no `long long`.
    pub fn parse(name: &str) -> Option<Scalar> {
        let words: Vec<&str> = name.split_whitespace().collect();
        if let [one] = words[..] {
            return match one {
                "signed" => Some(Scalar::Int),
                "unsigned" => Some(Scalar::UInt),
                _ => TABLE.iter().find(|i| i.name == one).map(|i| i.scalar),
            };
        }
        let count = |w: &str| words.iter().filter(|&&x| x == w).count();
        let (uns, sig, chr, shrt, lng, int) =
            (count("unsigned"), count("signed"), count("char"), count("short"), count("long"), count("int"));
        if words.is_empty() || uns + sig + chr + shrt + lng + int != words.len() || uns + sig > 1 || int > 1 || chr > 1
        {
            return None;
        }
        let unsigned = uns == 1;
        Some(match (chr, shrt, lng) {
            (1, 0, 0) if int == 0 => pick(unsigned, Scalar::UChar, Scalar::Char),
            (0, 1, 0) => pick(unsigned, Scalar::UShort, Scalar::Short),
            (0, 0, 0) => pick(unsigned, Scalar::UInt, Scalar::Int),
            (0, 0, 1) => pick(unsigned, Scalar::ULong, Scalar::Long),
            _ => return None,
        })
    }

    /// The OpenCL C name: `uint` for `unsigned int`.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// Bytes, for the types whose width the specification fixes.
    pub fn size(self) -> Option<u32> {
        self.info().size
    }

    pub fn int_type(self) -> Option<IntType> {
        let i = self.info();
        i.int.map(|s| IntType { size: i.size.map(|n| n as u8), signed: s == Signed::Yes })
    }

    /// Its size, for a scalar that clayout moves as words: 4 or 8 bytes (`int`, `uint`,
    /// `float`, `long`, `ulong`, `double`).
    pub fn word_bytes(self) -> Option<u32> {
        self.size().filter(|n| matches!(n, 4 | 8))
    }
}

fn pick(unsigned: bool, u: Scalar, s: Scalar) -> Scalar {
    if unsigned {
        u
    } else {
        s
    }
}

/// A builtin scalar (`lanes` 1) or vector type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Builtin {
    pub scalar: Scalar,
    pub lanes: u32,
}

impl Builtin {
    /// The builtin type a name spells: a scalar as [`Scalar::parse`] reads it, or a vector
    /// (`float4`, `uchar16`).
    pub fn parse(name: &str) -> Option<Builtin> {
        if let Some(scalar) = Scalar::parse(name) {
            return Some(Builtin { scalar, lanes: 1 });
        }
        let base = name.trim_end_matches(|c: char| c.is_ascii_digit());
        let lanes = LANES.iter().copied().find(|n| n.to_string() == name[base.len()..])?;
        let info = TABLE.iter().find(|i| i.name == base && i.vectors)?;
        Some(Builtin { scalar: info.scalar, lanes })
    }
}

/// The scalar of a 4- or 8-byte word type name (`float`, `unsigned int`...) and its size.
pub fn word_scalar(name: &str) -> Option<(Scalar, u32)> {
    let s = Scalar::parse(name)?;
    Some((s, s.word_bytes()?))
}

/// Whether one identifier names a builtin type: a scalar, a vector or `void`.
pub fn is_type_word(word: &str) -> bool {
    !word.contains(char::is_whitespace) && (word == "void" || Builtin::parse(word).is_some())
}

/// The unsigned integer type of words of `bytes` bytes (4 or 8), for copies that move words
/// without reading them.
pub fn word_type(bytes: u32) -> &'static str {
    if bytes == 8 {
        "ulong"
    } else {
        "uint"
    }
}

/// An OpenCL C integer type. `size` is `None` for the address-sized types (`size_t`...), whose
/// width is the device's and shows only in the argument's byte count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IntType {
    pub size: Option<u8>,
    pub signed: bool,
}

impl IntType {
    /// The value of a kernel argument set with `clSetKernelArg(k, i, bytes.len(), bytes)`, in
    /// the host's byte order as OpenCL requires.
    pub fn decode(self, bytes: &[u8]) -> Result<u64, String> {
        let ok_len = match self.size {
            Some(n) => bytes.len() == usize::from(n),
            None => bytes.len() == 4 || bytes.len() == 8,
        };
        if !ok_len {
            let want = self.size.map_or("4 or 8".to_string(), |n| n.to_string());
            return Err(format!("argument has {} bytes, its type needs {want}", bytes.len()));
        }
        let little = cfg!(target_endian = "little");
        let top = if little { bytes.last() } else { bytes.first() };
        let fill = if self.signed && top.is_some_and(|b| b & 0x80 != 0) { 0xff } else { 0 };
        let mut buf = [fill; 8];
        if little {
            buf[..bytes.len()].copy_from_slice(bytes);
        } else {
            buf[8 - bytes.len()..].copy_from_slice(bytes);
        }
        let raw = u64::from_ne_bytes(buf);
        if self.signed && (raw as i64) < 0 {
            return Err(format!("argument is negative ({})", raw as i64));
        }
        Ok(raw)
    }
}

/// The integer type named by `name`, word order free as in C (`unsigned long int`).
pub fn int_type(name: &str) -> Option<IntType> {
    Scalar::parse(name)?.int_type()
}

/// Decodes an integer scalar argument of the type named `type_name` (as written in the kernel,
/// e.g. `uint`, `unsigned long`, `size_t`): the tests' shorthand for what the runtime does in
/// two steps, validation finding the type and the launch decoding its bytes.
#[cfg(test)]
pub(crate) fn decode_int_arg(type_name: &str, bytes: &[u8]) -> Result<u64, String> {
    match int_type(type_name) {
        Some(t) => t.decode(bytes),
        None => Err(format!("`{type_name}` is not an integer type")),
    }
}

/// Byte size of a builtin scalar type (integers of fixed width, `half`, `float`, `double`):
/// the word of an SoA array of such elements.
pub fn scalar_size(name: &str) -> Option<u32> {
    Scalar::parse(name)?.size()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_type_names() {
        let t = |s, n| Some(IntType { size: Some(n), signed: s });
        assert_eq!(int_type("uint"), t(false, 4));
        assert_eq!(int_type("unsigned int"), t(false, 4));
        assert_eq!(int_type("int  unsigned"), t(false, 4));
        assert_eq!(int_type("unsigned long int"), t(false, 8));
        assert_eq!(int_type("long"), t(true, 8));
        assert_eq!(int_type("signed char"), t(true, 1));
        assert_eq!(int_type("unsigned short"), t(false, 2));
        assert_eq!(int_type("size_t"), Some(IntType { size: None, signed: false }));
        for bad in ["float", "long long", "unsigned signed", "int int", "", "Foo", "char short"] {
            assert_eq!(int_type(bad), None, "{bad}");
        }
    }

    #[test]
    fn decoding_arguments() {
        assert_eq!(decode_int_arg("int", &7i32.to_ne_bytes()), Ok(7));
        assert_eq!(decode_int_arg("uint", &u32::MAX.to_ne_bytes()), Ok(u64::from(u32::MAX)));
        assert_eq!(decode_int_arg("ulong", &u64::MAX.to_ne_bytes()), Ok(u64::MAX));
        assert_eq!(decode_int_arg("short", &300i16.to_ne_bytes()), Ok(300));
        assert_eq!(decode_int_arg("uchar", &[200]), Ok(200));
        assert_eq!(decode_int_arg("size_t", &5u32.to_ne_bytes()), Ok(5));
        assert_eq!(decode_int_arg("size_t", &5u64.to_ne_bytes()), Ok(5));
        assert!(decode_int_arg("int", &(-3i32).to_ne_bytes()).unwrap_err().contains("negative (-3)"));
        assert!(decode_int_arg("char", &[0xff]).unwrap_err().contains("negative (-1)"));
        assert!(decode_int_arg("long", &i64::MIN.to_ne_bytes()).is_err());
        assert!(decode_int_arg("int", &[1, 2]).unwrap_err().contains("2 bytes"));
        assert!(decode_int_arg("size_t", &[1, 2]).is_err());
        assert!(decode_int_arg("float", &[0; 4]).is_err());
    }

    #[test]
    fn sizes_and_vectors() {
        let vector = |s| Builtin::parse(s).is_some_and(|b| b.lanes > 1);
        assert_eq!(scalar_size("float"), Some(4));
        assert_eq!(scalar_size("double"), Some(8));
        assert_eq!(scalar_size("ulong"), Some(8));
        assert_eq!(scalar_size("size_t"), None);
        assert_eq!(scalar_size("float4"), None);
        assert!(vector("float4") && vector("uchar16"));
        assert!(!vector("float5") && !vector("float") && !vector("cell4") && !vector("float04"));
    }

    #[test]
    fn words_and_type_words() {
        assert_eq!(word_scalar("unsigned int"), Some((Scalar::UInt, 4)));
        assert_eq!(word_scalar("long unsigned int").map(|(s, n)| (s.name(), n)), Some(("ulong", 8)));
        assert_eq!(word_scalar("half"), None);
        assert_eq!(word_scalar("char"), None);
        assert_eq!(Builtin::parse("double3"), Some(Builtin { scalar: Scalar::Double, lanes: 3 }));
        assert_eq!(Builtin::parse("size_t2"), None);
        let word = |s| Builtin::parse(s).and_then(|b| b.scalar.word_bytes());
        assert_eq!((word("float4"), word("ulong16"), word("float5"), word("half")), (Some(4), Some(8), None, None));
        assert!(is_type_word("void") && is_type_word("ushort8") && is_type_word("bool"));
        assert!(!is_type_word("unsigned int") && !is_type_word("Cell"));
    }
}
