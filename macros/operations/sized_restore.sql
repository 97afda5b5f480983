{#-- dbt run-operation sized_restore --args '{relation: schema.table, instant: "20261124103000123"}'
     Brings the table back to its state right after a retained completed instant (see
     sized_timeline), as a new instant of its own: sized_rollback undoes a restore. An
     instant that is unknown, not completed or past the table's retention fails naming the
     instants that can be restored; nothing changes then. --#}
{% macro sized_restore(relation, instant) %}
  {%- set rel = sized_resolve_relation(relation) -%}
  {%- set result = adapter.sized_restore(rel, instant) -%}
  {{ print(result.message) }}
  {{ return(result.instant) }}
{% endmacro %}
