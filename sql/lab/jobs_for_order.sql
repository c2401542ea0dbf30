-- lab/jobs_for_order.sql: LAB HELPER. The jobs whose payload names one order,
-- such as its receipt email, to check that an order and its jobs go together.
-- Safe: yes, read-only.
-- Parameters: order_id (bigint).

SELECT id, kind, status FROM jobs
WHERE payload @> jsonb_build_object('order_id', :order_id::bigint)
ORDER BY id;
