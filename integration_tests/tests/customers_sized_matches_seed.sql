select * from {{ ref('customers') }} except select * from {{ ref('customers_sized') }}
