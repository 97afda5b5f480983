-- batch 1: ids 1..3000 over 5 days; batch 2: every third id updated, ids 3001..4000 new.
{{ config(materialized='sized_incremental', partition_by=['day'], unique_key='id',
          incremental_strategy='upsert', target_file_size='32KB', distribution='exact',
          lock_lease=var('lock_lease', '5m'), lock_timeout=var('lock_timeout', '0s')) }}
{% if var('batch') | int == 1 %}
select id, date_add(date'2025-03-01', id % 5) as day, cast(id * 10 as bigint) as value,
       sha2(cast(id as string), 256) as payload
from (select explode(sequence(1, 3000)) as id)
{% else %}
select id, date_add(date'2025-03-01', id % 5) as day,
       cast(case when id <= 3000 then id * 10 + 1 else id * 10 end as bigint) as value,
       sha2(cast(id as string), 256) as payload
from (select explode(sequence(1, 4000)) as id)
where id % 3 = 0 or id > 3000
{% endif %}
