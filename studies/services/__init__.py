"""Every write of the annotations app. Commands, views and (later) the API call these; none holds logic."""
