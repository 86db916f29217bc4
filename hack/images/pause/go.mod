module tfop.local/pause

go 1.22
