-- Revision 0041: memex._text_rows returns only the columns the text step reads (issue 39,
-- item 0).
--
-- memex._text_rows (sql/memories/040_text_rows.sql) returned `setof memex.memories` with
-- content and embedding set to null, its select list written out in the table's column
-- order. That order is not the same in every database: revision 0037's online conversion
-- (memexdb convert-embeddings) drops the float4 column and renames the half-precision one
-- in its place, so `embedding` is the table's last column there, and the SQL layer failed
-- to apply ("return type mismatch"). The function now returns a table of its own columns,
-- by name; a function's return type cannot be changed by `create or replace`, so the old
-- one is dropped here and the SQL layer creates the new one (memex._candidates_ann calls
-- it, with no dependency recorded: a SQL function's body is checked when it runs).
drop function if exists memex._text_rows(text, text, timestamptz, boolean,
                                         memex.search_filters, tsquery, bigint);
