-- batch 1: ids 1..4000; batch 2: ids 4001..5000, packed into the small files.
{{ config(materialized='sized_incremental', tags=['threads'], partition_by=['p'],
          incremental_strategy='insert', target_file_size='24KB') }}
select id, id % 5 as p, cast(id * 10 as bigint) as value
from (select explode(sequence({{ 1 if var('batch') | int == 1 else 4001 }},
                              {{ 4000 if var('batch') | int == 1 else 5000 }})) as id)
