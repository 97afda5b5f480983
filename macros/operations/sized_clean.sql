{#-- dbt run-operation sized_clean --args '{relation: schema.table}'
     Deletes the set-aside files of instants past the table's retention (retain_commits,
     retain_hours, as its last write recorded them; given here, they override it for this
     run), folds those instants into the timeline's archive, and removes hidden leftovers
     (_temporary, _SUCCESS, ...) older than the retention (at least an hour) from the table's
     directory. Runs after every commit too (there it only looks at set-aside files). --#}
{% macro sized_clean(relation) %}
  {%- set rel = sized_resolve_relation(relation) -%}
  {%- set message = adapter.sized_clean(rel, kwargs) -%}
  {{ print(message) }}
  {{ return(message) }}
{% endmacro %}
