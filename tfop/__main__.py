from tfop.cli import main

raise SystemExit(main())
