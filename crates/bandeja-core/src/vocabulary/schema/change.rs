//! One difference between two versions of a payload's schema, and the rules that say
//! whether it is compatible in each direction.
//!
//! - **Backward**: a consumer built with the *new* schema reads messages written with the
//!   *old* one (rows stored before the deploy, producers not yet upgraded).
//! - **Forward**: a consumer built with the *old* schema reads messages written with the
//!   *new* one (a producer deployed before its consumers).
//!
//! bandeja decodes tolerantly — fields a type does not know are ignored — unless the type
//! refuses them (`#[serde(deny_unknown_fields)]`, `additionalProperties: false` in its
//! schema). A change is *breaking* unless it is compatible both ways.

use std::fmt;

use serde::Serialize;

/// What changed at one place of a schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "change", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ChangeKind {
    /// A field the old schema did not list.
    FieldAdded {
        /// Whether the new schema requires it.
        required: bool,
        /// Whether the old schema refuses unknown fields (old consumers then fail on it).
        refused_by_old: bool,
    },
    /// A field the new schema no longer lists (a rename is one removal and one addition).
    FieldRemoved {
        /// Whether the old schema required it.
        was_required: bool,
        /// Whether the new schema refuses unknown fields (old messages then fail on it).
        refused_by_new: bool,
    },
    /// An optional field is now required.
    BecameRequired,
    /// A required field is now optional: new messages may lack it.
    BecameOptional,
    /// `null` is now accepted (`T` became `Option<T>`).
    BecameNullable,
    /// `null` is no longer accepted (`Option<T>` became `T`).
    NoLongerNullable,
    /// The type changed to one that neither accepts all the old values nor is accepted by
    /// the old schema.
    TypeChanged {
        /// The old type.
        from: String,
        /// The new type.
        to: String,
    },
    /// The new type accepts every old value and more (`integer` to `number`).
    TypeWidened {
        /// The old type.
        from: String,
        /// The new type.
        to: String,
    },
    /// The new type accepts only some of the old values.
    TypeNarrowed {
        /// The old type.
        from: String,
        /// The new type.
        to: String,
    },
    /// An enum value (a unit variant) the old schema did not allow.
    ValueAdded {
        /// The value, as JSON.
        value: String,
    },
    /// An enum value (a unit variant) the new schema no longer allows.
    ValueRemoved {
        /// The value, as JSON.
        value: String,
    },
    /// An enum variant with data the old schema did not have.
    VariantAdded {
        /// The variant's tag.
        variant: String,
    },
    /// An enum variant with data the new schema no longer has.
    VariantRemoved {
        /// The variant's tag.
        variant: String,
    },
    /// A constraint (`maxLength`, `format`, `enum`, …) now accepts more values.
    ConstraintLoosened {
        /// The JSON Schema keyword.
        keyword: String,
        /// Its old value, as JSON (`None`: absent).
        from: Option<String>,
        /// Its new value, as JSON (`None`: absent).
        to: Option<String>,
    },
    /// A constraint now accepts fewer values.
    ConstraintTightened {
        /// The JSON Schema keyword.
        keyword: String,
        /// Its old value, as JSON (`None`: absent).
        from: Option<String>,
        /// Its new value, as JSON (`None`: absent).
        to: Option<String>,
    },
    /// A constraint changed to another that is neither looser nor tighter (a new `format`
    /// or `pattern`).
    ConstraintChanged {
        /// The JSON Schema keyword.
        keyword: String,
        /// Its old value, as JSON.
        from: String,
        /// Its new value, as JSON.
        to: String,
    },
    /// The object now refuses fields it does not list (`deny_unknown_fields`): every
    /// later added field will break consumers of this version.
    UnknownFieldsRefused,
    /// The object now ignores fields it does not list.
    UnknownFieldsAccepted,
    /// A part of the schema the check does not read by meaning (`allOf`, `prefixItems`,
    /// an untagged enum's alternatives, …) is different: taken as breaking.
    ShapeChanged {
        /// The keyword, or what differs.
        keyword: String,
    },
}

impl ChangeKind {
    /// Whether a new consumer still reads old messages after this change, and whether an
    /// old consumer still reads new messages: the rules of the check.
    #[must_use]
    pub fn compatibility(&self) -> (bool, bool) {
        match self {
            ChangeKind::FieldAdded {
                required,
                refused_by_old,
            } => (!required, !refused_by_old),
            // Old consumers that used the field lose it (a required one fails to decode,
            // an optional one silently reads as absent): removing breaks whoever used it.
            ChangeKind::FieldRemoved { refused_by_new, .. } => (!refused_by_new, false),
            ChangeKind::BecameRequired
            | ChangeKind::NoLongerNullable
            | ChangeKind::TypeNarrowed { .. }
            | ChangeKind::ValueRemoved { .. }
            | ChangeKind::VariantRemoved { .. }
            | ChangeKind::ConstraintTightened { .. } => (false, true),
            ChangeKind::BecameOptional
            | ChangeKind::BecameNullable
            | ChangeKind::TypeWidened { .. }
            | ChangeKind::ValueAdded { .. }
            | ChangeKind::VariantAdded { .. }
            | ChangeKind::ConstraintLoosened { .. } => (true, false),
            ChangeKind::TypeChanged { .. }
            | ChangeKind::ConstraintChanged { .. }
            | ChangeKind::ShapeChanged { .. } => (false, false),
            ChangeKind::UnknownFieldsRefused | ChangeKind::UnknownFieldsAccepted => (true, true),
        }
    }
}

impl fmt::Display for ChangeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let absent = |v: &Option<String>| v.clone().unwrap_or_else(|| "none".to_owned());
        match self {
            ChangeKind::FieldAdded {
                required,
                refused_by_old,
            } => {
                let which = if *required { "required" } else { "optional" };
                write!(f, "{which} field added")?;
                if *refused_by_old {
                    write!(f, " (the old schema refuses unknown fields)")?;
                }
                Ok(())
            }
            ChangeKind::FieldRemoved {
                was_required,
                refused_by_new,
            } => {
                let which = if *was_required {
                    "required"
                } else {
                    "optional"
                };
                write!(f, "{which} field removed (or renamed)")?;
                if *refused_by_new {
                    write!(f, " (the new schema refuses unknown fields)")?;
                }
                Ok(())
            }
            ChangeKind::BecameRequired => write!(f, "became required"),
            ChangeKind::BecameOptional => write!(f, "became optional"),
            ChangeKind::BecameNullable => write!(f, "may now be null"),
            ChangeKind::NoLongerNullable => write!(f, "may no longer be null"),
            ChangeKind::TypeChanged { from, to } => write!(f, "type changed from {from} to {to}"),
            ChangeKind::TypeWidened { from, to } => write!(f, "type widened from {from} to {to}"),
            ChangeKind::TypeNarrowed { from, to } => {
                write!(f, "type narrowed from {from} to {to}")
            }
            ChangeKind::ValueAdded { value } => write!(f, "value {value} added"),
            ChangeKind::ValueRemoved { value } => write!(f, "value {value} removed"),
            ChangeKind::VariantAdded { variant } => write!(f, "variant `{variant}` added"),
            ChangeKind::VariantRemoved { variant } => write!(f, "variant `{variant}` removed"),
            ChangeKind::ConstraintLoosened { keyword, from, to } => write!(
                f,
                "`{keyword}` loosened from {} to {}",
                absent(from),
                absent(to)
            ),
            ChangeKind::ConstraintTightened { keyword, from, to } => write!(
                f,
                "`{keyword}` tightened from {} to {}",
                absent(from),
                absent(to)
            ),
            ChangeKind::ConstraintChanged { keyword, from, to } => {
                write!(f, "`{keyword}` changed from {from} to {to}")
            }
            ChangeKind::UnknownFieldsRefused => write!(
                f,
                "now refuses unknown fields (every field added later breaks its consumers)"
            ),
            ChangeKind::UnknownFieldsAccepted => write!(f, "now ignores unknown fields"),
            ChangeKind::ShapeChanged { keyword } => {
                write!(
                    f,
                    "`{keyword}` changed (not read by meaning: taken as breaking)"
                )
            }
        }
    }
}

/// One change found between two schemas: where, what, and its compatibility.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    path: String,
    kind: ChangeKind,
}

impl Change {
    /// The change `kind` at `path`.
    #[must_use]
    pub fn new(path: impl Into<String>, kind: ChangeKind) -> Change {
        Change {
            path: path.into(),
            kind,
        }
    }

    /// Where: the field path from the payload's root, `lines[].sku` (`[]`: an array's
    /// items, `{}`: a map's values, `(Card)`: an enum variant); empty for the root.
    #[must_use]
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What changed.
    #[must_use]
    pub fn kind(&self) -> &ChangeKind {
        &self.kind
    }

    /// Whether a consumer with the new schema still reads messages of the old one.
    #[must_use]
    pub fn backward(&self) -> bool {
        self.kind.compatibility().0
    }

    /// Whether a consumer with the old schema still reads messages of the new one.
    #[must_use]
    pub fn forward(&self) -> bool {
        self.kind.compatibility().1
    }

    /// Whether it breaks a direction: a version bump is needed.
    #[must_use]
    pub fn is_breaking(&self) -> bool {
        !(self.backward() && self.forward())
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let yes_no = |ok: bool| if ok { "yes" } else { "NO" };
        let path = if self.path.is_empty() {
            "(the payload)"
        } else {
            &self.path
        };
        write!(
            f,
            "{path}: {} (backward: {}, forward: {})",
            self.kind,
            yes_no(self.backward()),
            yes_no(self.forward())
        )
    }
}

impl Serialize for Change {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Json<'a> {
            path: &'a str,
            #[serde(flatten)]
            kind: &'a ChangeKind,
            description: String,
            backward: bool,
            forward: bool,
            breaking: bool,
        }
        Json {
            path: &self.path,
            kind: &self.kind,
            description: self.kind.to_string(),
            backward: self.backward(),
            forward: self.forward(),
            breaking: self.is_breaking(),
        }
        .serialize(serializer)
    }
}
