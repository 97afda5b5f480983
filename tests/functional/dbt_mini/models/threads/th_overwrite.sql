-- batch 1: ids 1..8000 over p 0..7; batch 2 replaces p 0..2 with ids 8001..9500.
{{ config(materialized='sized_incremental', tags=['threads'], partition_by=['p'],
          incremental_strategy='insert_overwrite', target_file_size='20KB') }}
{% if var('batch') | int == 1 %}
select id, id % 8 as p, cast(id * 10 as bigint) as value
from (select explode(sequence(1, 8000)) as id)
{% else %}
select id, id % 3 as p, cast(id * 10 as bigint) as value
from (select explode(sequence(8001, 9500)) as id)
{% endif %}
