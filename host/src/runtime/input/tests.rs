//! Input requests and answers at the WIT boundary.
