-- after batch 2: 4000 keys, each once, updated values where id % 3 = 0
select * from (
  select count(*) as n, count(distinct id) as keys,
         sum(value) as total
  from {{ ref('orders') }}
) where n != {{ 3000 if var('batch') | int == 1 else 4000 }}
     or keys != n
     or total != {{ 45015000 if var('batch') | int == 1 else 45015000 + 1000 + 35005000 }}
