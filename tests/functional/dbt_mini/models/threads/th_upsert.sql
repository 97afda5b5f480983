-- batch 1: ids 1..6000; batch 2: every fourth id updated, ids 6001..7000 new.
{{ config(materialized='sized_incremental', tags=['threads'], partition_by=['p'],
          unique_key='id', incremental_strategy='upsert', target_file_size='16KB') }}
select id, id % 6 as p,
       cast(case when {{ var('batch') }} = 2 and id <= 6000 then id * 10 + 1 else id * 10 end as bigint) as value
from (select explode(sequence(1, {{ 6000 if var('batch') | int == 1 else 7000 }})) as id)
where {{ var('batch') }} = 1 or id % 4 = 0 or id > 6000
