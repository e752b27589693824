//! `toolbelt run` from the command line.
