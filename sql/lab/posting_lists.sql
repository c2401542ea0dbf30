-- lab/posting_lists.sql: LAB HELPER. What a btree index's leaf pages hold,
-- item by item (pageinspect): how many items are posting lists (one key and
-- a sorted array of row pointers, from deduplication), how many pointers
-- each holds on average, how many leaf items there are, and how many row
-- pointers in all. A leaf's high key (its first item, on every leaf but the
-- rightmost) points at no row and is left out.
-- Safe: yes, read-only. Reads every page of the index: a lab's small index only.
-- Parameters: index (text, the index's name).

WITH leaf AS (
  SELECT blk, s.btpo_next
  FROM generate_series(1, (pg_relation_size(:'index'::regclass)
                           / current_setting('block_size')::int) - 1) AS blk
  CROSS JOIN LATERAL bt_page_stats(:'index'::text, blk::int) AS s
  WHERE s.type = 'l'
),
items AS (
  SELECT i.tids
  FROM leaf CROSS JOIN LATERAL bt_page_items(:'index'::text, leaf.blk::int) AS i
  WHERE NOT (i.itemoffset = 1 AND leaf.btpo_next <> 0)
)
SELECT count(*) FILTER (WHERE tids IS NOT NULL) AS posting_lists,
       coalesce(avg(cardinality(tids)) FILTER (WHERE tids IS NOT NULL), 0)::float8 AS pointers_each,
       count(*) AS leaf_items,
       coalesce(sum(coalesce(cardinality(tids), 1)), 0)::bigint AS row_pointers
FROM items;
