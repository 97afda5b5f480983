-- as th_upsert over 4 partitions, clustered along a Hilbert curve after every commit.
{{ config(materialized='sized_incremental', tags=['threads'], partition_by=['p'],
          unique_key='id', incremental_strategy='upsert', target_file_size='16KB',
          cluster_by=['value', 'id'], cluster_strategy='hilbert', cluster_every_n_commits=1) }}
select id, id % 4 as p,
       cast(case when {{ var('batch') }} = 2 and id <= 6000 then id * 10 + 1 else id * 10 end as bigint) as value
from (select explode(sequence(1, {{ 6000 if var('batch') | int == 1 else 7000 }})) as id)
where {{ var('batch') }} = 1 or id % 4 = 0 or id > 6000
