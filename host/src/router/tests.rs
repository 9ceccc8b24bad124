//! Router tests: exposed names, collisions, order, cursors, template routing.
