-- Synthetic events: one day per event_date, daily volume growing ~10% month over month
-- (skewed partitions), with a wide-ish payload so files have realistic sizes. The rows
-- arrive over 8 Spark partitions in no order of date, as the output of an upstream stage
-- does: what makes plain Spark write a file per task per date. event_time: microbatch
-- models reading it (events_microbatch) get each batch's days only.
{{ config(materialized='view', event_time='event_date') }}
with days as (
  select explode(sequence(0, {{ var('event_days') }} - 1)) as day_index
),
volume as (
  select day_index,
         date_add(date'2025-01-01', day_index) as event_date,
         cast({{ var('base_rows_per_day') }} * pow(1.1, day_index / 30.0) as int) as n
  from days
)
select /*+ REPARTITION(8) */
  cast(v.day_index * 100000 + r.i as bigint) as event_id,
  v.event_date,
  cast(1 + pmod(hash(v.day_index, r.i), 12) as int) as customer_id,
  cast(pmod(hash(r.i, 7), 50000) as bigint) as session_id,
  element_at(array('click', 'view', 'purchase', 'refund'), 1 + pmod(r.i, 4)) as event_type,
  cast(pmod(hash(r.i, v.day_index, 3), 100000) / 100.0 as double) as amount,
  sha2(cast(v.day_index * 100000 + r.i as string), 256) as payload
from volume v
lateral view explode(sequence(1, v.n)) r as i
