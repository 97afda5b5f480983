-- The table sized_clean is killed on: batch b (KR_BATCH, an environment variable: see
-- kr_snapshot_source) holds ids 0..(29 + 10 b), every row tagged b, so each commit rewrites
-- every file and sets the old ones aside.
{{ config(materialized='incremental', incremental_strategy='merge', unique_key='id',
          partition_by=['p'], target_file_size='16KB') }}
select id, cast(id % 3 as int) as p, concat('b', {{ env_var('KR_BATCH', '1') }}) as tag
from range(0, {{ 30 + 10 * (env_var('KR_BATCH', '1') | int) }})
