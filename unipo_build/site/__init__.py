"""The MkDocs side: hooks and macros, the views (each a folder with its Python, JS and CSS), the
chapters' computed facts grouped by the question they answer, and the playgrounds. Imports the core
and the trainers, never training or the CLI."""
