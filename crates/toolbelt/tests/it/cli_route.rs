//! `toolbelt route` from the command line.
