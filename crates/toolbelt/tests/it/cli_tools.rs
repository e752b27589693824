//! `toolbelt tools` from the command line.
