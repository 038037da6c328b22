"""The service's use cases, one module each, between the edges (API, pages, CLIs) and the parts below them
(service/analysis pure computation, service/store persistence, service/profiles the profile root):

* analyse:  stored runs -> service.analysis -> analysis, violations, candidate profiles stored
* validate: the agent's validation figures -> verdict -> the candidate's state, contradicted violations
* publish:  candidate -> profile root (publish, roll back, history, fsck) and what a campaign gave
* explain:  the evidence of one cell's native decision, from the stored runs
* native:   the nightly native chain: a campaign's decision file as a candidate, its validation settled, published
* live:     what a library runs with now (the profile root's current set with its validation figures)
* notify:   the alerts sent by mail and webhook
* usage:    where the users' collective time goes (usage records -> ranked cells)

A workflow runs inside an app context; the caller (API view, page, command) commits unless it says it does.
"""
