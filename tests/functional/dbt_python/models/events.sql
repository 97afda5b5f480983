-- batch 1: ids 1..2000 over 5 days; batch 2: the same ids, every tenth value changed, and
-- ids 2001..2500 new.
{{ config(materialized='table', event_time='day') }}
-- depends_on: {{ ref('customers') }}
select id, date_add(date'2025-03-01', id % 5) as day, cast(id % 40 + 1 as int) as customer_id,
       cast(case when {{ var('batch') }} = 2 and id % 10 = 0 then id * 10 + 1 else id * 10 end
            as bigint) as value,
       sha2(cast(id as string), 256) as payload
from (select explode(sequence(1, {{ 2000 if var('batch') | int == 1 else 2500 }})) as id)
