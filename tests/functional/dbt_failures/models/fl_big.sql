-- var rows: how many rows (60,000 fill a 3 MB directory); var salt: the payloads' version
{{ config(materialized='sized_incremental', partition_by=['p'], unique_key='id',
          target_file_size='1MB') }}
select id, id % 2 as p,
       sha2(concat(cast(id as string), '{{ var("salt", "a") }}'), 512) as payload
from range({{ var('rows', 1000) }})
